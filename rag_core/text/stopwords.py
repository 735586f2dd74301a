"""Stop words per language: articles, pronouns, prepositions, auxiliaries and question words.

Kept short on purpose. BM25's idf already weighs common words down; what a list must remove
are the words that make up most of a question and carry no evidence ("Wie kann ich …?",
"¿Cómo puedo …?"), and the longest posting lists. Written for this project (no list with a
clear licence ships on PyPI: stop-words has no licence metadata and a 652-word Spanish list
that drops content words such as "actualmente"). Languages without a list here are stemmed
only; CJK text is indexed as character bigrams, where a stop list does not apply.
"""

from __future__ import annotations

_RAW = {
    "de": """aber alle allem allen aller alles als also am an ander andere anderen auch auf aus bei beim bin bis
    bist da damit dann das dass dem den denn der des dessen die dies diese diesem diesen dieser dieses doch dort du
    durch ein eine einem einen einer eines er es etwa euch euer für gegen hat hatte hätte haben habe hier hin hinter
    ich ihm ihn ihnen ihr ihre im in indem ins ist ja jede jedem jeden jeder jedes jetzt kann kein keine können
    könnte man manche mein meine mich mir mit muss müssen nach nicht nichts noch nun nur ob oder ohne sehr sein
    seine sich sie sind so soll sollte sondern sonst über um und uns unser unter vom von vor wann war waren warum
    was weil welche welchem welchen welcher welches wenn wer werde werden wie wieder wieso will wir wird wo woher
    wohin womit worden wurde würde zu zum zur zwischen""",
    "fr": """a à afin ai aie aient ainsi alors au aucun aussi autre aux avait avant avec avez avoir avons ayant
    c ça ce ceci cela celle celles celui ces cet cette chaque comme comment d dans de des doit donc dont du elle
    elles en encore est et été être eu eux faire fait il ils j je jusqu l la le les leur leurs lors lui m ma mais
    me même mes moi mon n ne ni nos notre nous on ont ou où par parce pas peut peuvent plus pour pourquoi puis
    qu quand que quel quelle quelles quels qui quoi s sa sans se ses si son sont sous suis sur t ta te tes toi
    ton tous tout toute toutes très tu un une vos votre vous y""",
    "es": """a al algo algunas algunos ante antes aquel aquella cada como cómo con contra cual cuál cuales cuáles
    cuando cuándo cuanto cuánto cuántos cuántas de debe del desde donde dónde dos e el él ella ellas ellos en entre
    era eres es esa ese eso esta está están este esto estos estas fue fueron ha han hasta hay la las le les lo los
    más me mi mis mucho muy nada ni no nos nosotros o os otra otro para pero poco por porque puede pueden puedo
    qué que quien quién quienes se sea ser si sí sin sobre son su sus también tanto te tengo tiene tienen todo
    todos tu tú un una uno unos unas usted ustedes y ya yo""",
    "it": """a ad al alla alle allo agli ai anche che chi ci come con cosa cui da dal dalla dei del della delle
    dello dei di dove e è ed era essere gli ha hanno ho i il in io la le lei lo loro lui ma mi mio ne nei nel
    nella noi non o per perché più può qual quale quali quando quanto quello questa questo se si sia sono su sua
    sue suo sul sulla ti tra tu tutti tutto un una uno voi""",
    "pt": """a à ao aos as às com como da das de dele dela deve do dos e é ela elas ele eles em entre era essa
    esse esta está este eu foi for há isso isto já la lhe mais mas me meu minha muito na nas não nem no nos nós
    o onde os ou para pela pelas pelo pelos pode por porque posso qual quais quando quanto que quem se sem ser
    seu seus sua suas são também te tem tenho um uma umas uns você vocês""",
    "nl": """aan al alle als bij dan dat de deze die dit doen door een en er geen had heb hebben heeft het hier
    hij hoe hun ik in is je kan kunnen maar me meer met mijn moet naar niet nog nu of om onder ons ook op over
    te tot u uit van veel voor waar wanneer wat waarom wel welk welke werd wie wij wil worden wordt zal ze zich
    zij zijn zo zonder""",
}

STOPWORDS: dict[str, frozenset[str]] = {lang: frozenset(words.split()) for lang, words in _RAW.items()}
