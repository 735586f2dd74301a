"""What the app says to a person in its own words (refusals, the closest passages' heading,
the reasons and tips that come with them), in the question's language.

The app speaks English, German, French, Spanish, Japanese and Chinese; a question in another
language is answered in English. Keys are the answer policy's `decided_by` names where a
reason belongs to a rule (rag_core/generation/policy.py); the English texts are the ones the
rest of the code has always shown.
"""

from __future__ import annotations

LANGUAGES = ("en", "de", "fr", "es", "ja", "zh")

_TEXTS: dict[str, dict[str, str]] = {
    "abstain": {
        "en": "I don't have information about that in the selected knowledge bases.",
        "de": "Dazu habe ich in den ausgewählten Wissensdatenbanken keine Informationen.",
        "fr": "Je n'ai pas d'information à ce sujet dans les bases de connaissances sélectionnées.",
        "es": "No tengo información sobre eso en las bases de conocimiento seleccionadas.",
        "ja": "選択したナレッジベースには、それに関する情報がありません。",
        "zh": "所选知识库中没有关于此问题的信息。",
    },
    # A refusal with the closest passages beneath it: they may hold the answer, unconfirmed.
    # Saying the information is absent would be false whenever they do ("abstain" is kept for
    # when nothing relevant was found).
    "unconfirmed": {
        "en": "I could not confirm an answer in the selected knowledge bases. The closest passages are below.",
        "de": "Ich konnte in den ausgewählten Wissensdatenbanken keine Antwort bestätigen. Die nächstliegenden "
              "Passagen stehen unten.",
        "fr": "Je n'ai pas pu confirmer de réponse dans les bases de connaissances sélectionnées. Les passages les "
              "plus proches sont ci-dessous.",
        "es": "No pude confirmar una respuesta en las bases de conocimiento seleccionadas. Los pasajes más cercanos "
              "están abajo.",
        "ja": "選択したナレッジベースでは回答を確認できませんでした。最も近い箇所を以下に示します。",
        "zh": "无法在所选知识库中确认答案。最接近的段落列在下方。",
    },
    "closest_heading": {
        "en": "No answer could be confirmed in these passages, the closest ones found. Check them yourself",
        "de": "In diesen Passagen, den nächstliegenden aus Ihren Dokumenten, konnte keine Antwort bestätigt werden. "
              "Prüfen Sie sie selbst",
        "fr": "Aucune réponse n'a pu être confirmée dans ces passages, les plus proches de vos documents. "
              "Vérifiez-les vous-même",
        "es": "No se pudo confirmar una respuesta en estos pasajes, los más cercanos de sus documentos. "
              "Revíselos usted mismo",
        "ja": "これらの箇所（文書中で最も近い箇所）では回答を確認できませんでした。ご自身で確認してください",
        "zh": "在这些段落（您文档中最接近的段落）中无法确认答案。请自行查看",
    },
    # The offline reader reads English only: for another language it has not judged anything.
    "language": {
        "en": "Offline, answers can be confirmed only in English; these are the closest passages in your documents.",
        "de": "Offline können Antworten nur auf Englisch bestätigt werden; dies sind die nächstliegenden Passagen "
              "in Ihren Dokumenten.",
        "fr": "Hors ligne, les réponses ne peuvent être confirmées qu'en anglais ; voici les passages les plus proches "
              "dans vos documents.",
        "es": "Sin conexión, las respuestas solo se pueden confirmar en inglés; estos son los pasajes más cercanos "
              "de sus documentos.",
        "ja": "オフラインでは回答を英語でしか確認できません。以下は文書中で最も近い箇所です。",
        "zh": "离线时只能确认英文的答案；以下是您文档中最接近的段落。",
    },
    "language_reason": {
        "en": "The offline reader reads English only: it judged no sentence of these passages.",
        "de": "Der Offline-Leser liest nur Englisch: Er hat keinen Satz dieser Passagen beurteilt.",
        "fr": "Le lecteur hors ligne ne lit que l'anglais : il n'a jugé aucune phrase de ces passages.",
        "es": "El lector sin conexión solo lee inglés: no ha juzgado ninguna frase de estos pasajes.",
        "ja": "オフラインの読み取りモデルは英語しか読めないため、これらの箇所の文は判定していません。",
        "zh": "离线阅读模型只读英文：它没有判断这些段落中的任何句子。",
    },
    "retrieval": {
        "en": "No passage in the selected knowledge bases matched the question.",
        "de": "Keine Passage in den ausgewählten Wissensdatenbanken passte zur Frage.",
        "fr": "Aucun passage des bases de connaissances sélectionnées ne correspond à la question.",
        "es": "Ningún pasaje de las bases de conocimiento seleccionadas coincide con la pregunta.",
        "ja": "選択したナレッジベースに質問に一致する箇所はありませんでした。",
        "zh": "所选知识库中没有与问题匹配的段落。",
    },
    "reader": {
        "en": "No sentence in the closest passages could be confirmed as an answer to the question.",
        "de": "Kein Satz in den nächstliegenden Passagen konnte als Antwort auf die Frage bestätigt werden.",
        "fr": "Aucune phrase des passages les plus proches n'a pu être confirmée comme réponse à la question.",
        "es": "Ninguna frase de los pasajes más cercanos pudo confirmarse como respuesta a la pregunta.",
        "ja": "最も近い箇所のどの文も、質問への回答として確認できませんでした。",
        "zh": "最接近的段落中没有任何句子能被确认为问题的答案。",
    },
    "model": {
        "en": "The language model found no answer to the question in the closest passages.",
        "de": "Das Sprachmodell fand in den nächstliegenden Passagen keine Antwort auf die Frage.",
        "fr": "Le modèle de langage n'a trouvé aucune réponse à la question dans les passages les plus proches.",
        "es": "El modelo de lenguaje no encontró respuesta a la pregunta en los pasajes más cercanos.",
        "ja": "言語モデルは最も近い箇所に質問への回答を見つけられませんでした。",
        "zh": "语言模型在最接近的段落中没有找到问题的答案。",
    },
    "verification": {
        "en": "No sentence of the written answer could be confirmed in the sources.",
        "de": "Kein Satz der geschriebenen Antwort konnte in den Quellen bestätigt werden.",
        "fr": "Aucune phrase de la réponse rédigée n'a pu être confirmée dans les sources.",
        "es": "Ninguna frase de la respuesta redactada pudo confirmarse en las fuentes.",
        "ja": "作成された回答のどの文も、出典で確認できませんでした。",
        "zh": "所写答案中没有任何句子能在来源中得到确认。",
    },
    "why": {"en": "Why", "de": "Warum", "fr": "Pourquoi", "es": "Por qué", "ja": "理由", "zh": "原因"},
    "details": {"en": "Details", "de": "Details", "fr": "Détails", "es": "Detalles", "ja": "詳細", "zh": "详情"},
    "tip_kbs": {
        "en": "Check that the right knowledge bases are selected.",
        "de": "Prüfen Sie, ob die richtigen Wissensdatenbanken ausgewählt sind.",
        "fr": "Vérifiez que les bonnes bases de connaissances sont sélectionnées.",
        "es": "Compruebe que están seleccionadas las bases de conocimiento correctas.",
        "ja": "正しいナレッジベースが選択されているか確認してください。",
        "zh": "请检查是否选择了正确的知识库。",
    },
    "tip_terms": {
        "en": "Try other words for the key terms ({terms}).",
        "de": "Versuchen Sie andere Wörter für die Schlüsselbegriffe ({terms}).",
        "fr": "Essayez d'autres mots pour les termes clés ({terms}).",
        "es": "Pruebe otras palabras para los términos clave ({terms}).",
        "ja": "キーワード（{terms}）を別の言葉で試してください。",
        "zh": "请尝试用其他词语表达关键词（{terms}）。",
    },
    "tip_rephrase": {
        "en": "Try rephrasing the question.",
        "de": "Versuchen Sie, die Frage anders zu formulieren.",
        "fr": "Essayez de reformuler la question.",
        "es": "Intente reformular la pregunta.",
        "ja": "質問を言い換えてみてください。",
        "zh": "请尝试换一种方式提问。",
    },
    "tip_upload": {
        "en": "Upload a document that covers this topic.",
        "de": "Laden Sie ein Dokument hoch, das dieses Thema behandelt.",
        "fr": "Téléversez un document qui traite de ce sujet.",
        "es": "Suba un documento que trate este tema.",
        "ja": "このトピックを扱う文書をアップロードしてください。",
        "zh": "请上传涵盖此主题的文档。",
    },
    # What the page says while an answer is on its way (the chat page's waiting line).
    "searching": {
        "en": "Searching the selected knowledge bases…",
        "de": "Die ausgewählten Wissensdatenbanken werden durchsucht…",
        "fr": "Recherche dans les bases de connaissances sélectionnées…",
        "es": "Buscando en las bases de conocimiento seleccionadas…",
        "ja": "選択したナレッジベースを検索しています…",
        "zh": "正在搜索所选知识库…",
    },
    "reading": {
        "en": "Reading {n} passage(s) with {model}…",
        "de": "{n} Passage(n) werden mit {model} gelesen…",
        "fr": "Lecture de {n} passage(s) avec {model}…",
        "es": "Leyendo {n} pasaje(s) con {model}…",
        "ja": "{model} で {n} 件の箇所を読んでいます…",
        "zh": "正在用 {model} 阅读 {n} 个段落…",
    },
    "first_words": {
        "en": "first words usually after about {s} s on this machine.",
        "de": "die ersten Wörter erscheinen hier meist nach etwa {s} s.",
        "fr": "les premiers mots arrivent ici en général après environ {s} s.",
        "es": "las primeras palabras suelen llegar aquí tras unos {s} s.",
        "ja": "このマシンでは通常約 {s} 秒で最初の言葉が表示されます。",
        "zh": "在这台机器上通常约 {s} 秒后出现第一个字。",
    },
    "waited": {
        "en": "{s} s so far", "de": "bisher {s} s", "fr": "{s} s écoulées", "es": "{s} s hasta ahora",
        "ja": "経過 {s} 秒", "zh": "已用 {s} 秒",
    },
    "checking": {
        "en": "Checking the answer against the sources…",
        "de": "Die Antwort wird mit den Quellen abgeglichen…",
        "fr": "Vérification de la réponse auprès des sources…",
        "es": "Comprobando la respuesta con las fuentes…",
        "ja": "回答を出典と照合しています…",
        "zh": "正在根据来源核对答案…",
    },
    # moderation (generation/moderation.py): a question asking for harm, or an answer that would give it
    "refused": {
        "en": "I can't help with that: the request asks for something harmful ({category}). Questions about what "
              "your documents say are welcome.",
        "de": "Dabei kann ich nicht helfen: Die Anfrage zielt auf etwas Schädliches ({category}). Fragen zu Ihren "
              "Dokumenten beantworte ich gern.",
        "fr": "Je ne peux pas aider pour cela : la demande vise quelque chose de nuisible ({category}). Les questions "
              "sur vos documents sont les bienvenues.",
        "es": "No puedo ayudar con eso: la solicitud pide algo dañino ({category}). Las preguntas sobre sus "
              "documentos son bienvenidas.",
        "ja": "そのご依頼にはお応えできません：有害な内容（{category}）を求めています。ドキュメントについてのご質問は歓迎します。",
        "zh": "我无法帮助处理此请求：它要求有害的内容（{category}）。欢迎询问有关您文档的问题。",
    },
    "refused_self_harm": {
        "en": "I can't help with that. If you are thinking about harming yourself, please reach out now to someone "
              "you trust, or to a local crisis line or emergency number: you don't have to go through this alone.",
        "de": "Dabei kann ich nicht helfen. Wenn Sie daran denken, sich etwas anzutun, wenden Sie sich bitte jetzt an "
              "einen Menschen Ihres Vertrauens, die Telefonseelsorge (0800 111 0 111) oder den Notruf: Sie müssen "
              "da nicht allein durch.",
        "fr": "Je ne peux pas aider pour cela. Si vous pensez à vous faire du mal, contactez dès maintenant une "
              "personne de confiance, une ligne d'écoute ou les urgences : vous n'êtes pas seul·e.",
        "es": "No puedo ayudar con eso. Si está pensando en hacerse daño, contacte ahora con alguien de confianza, "
              "una línea de ayuda en crisis o los servicios de emergencia: no tiene que pasar por esto solo.",
        "ja": "そのご依頼にはお応えできません。自分を傷つけることを考えているなら、今すぐ信頼できる人や、いのちの電話などの相談窓口、"
              "緊急番号に連絡してください。一人で抱え込まなくて大丈夫です。",
        "zh": "我无法帮助处理此请求。如果您正在考虑伤害自己，请立即联系您信任的人、当地心理危机热线或紧急电话：您不必独自面对。",
    },
    # a part of a several-part question that the documents do not answer (generation/parts.py)
    "missing_part": {
        "en": "The documents do not answer this part: “{part}”",
        "de": "Diesen Teil beantworten die Dokumente nicht: „{part}“",
        "fr": "Les documents ne répondent pas à cette partie : « {part} »",
        "es": "Los documentos no responden a esta parte: «{part}»",
        "ja": "この部分には文書に答えがありません：「{part}」",
        "zh": "文档没有回答这一部分：“{part}”",
    },
    "stop": {"en": "Stop", "de": "Abbrechen", "fr": "Arrêter", "es": "Detener", "ja": "停止", "zh": "停止"},
    "stopped": {
        "en": "Stopped before the answer was finished. Ask again, or rephrase the question.",
        "de": "Abgebrochen, bevor die Antwort fertig war. Fragen Sie erneut oder formulieren Sie die Frage um.",
        "fr": "Arrêté avant la fin de la réponse. Reposez la question ou reformulez-la.",
        "es": "Detenido antes de terminar la respuesta. Pregunte de nuevo o reformule la pregunta.",
        "ja": "回答が完了する前に停止しました。もう一度質問するか、言い換えてください。",
        "zh": "回答完成前已停止。请重新提问或换一种说法。",
    },
}

# decided_by → the reason's key; rules not listed keep the policy's English text.
_REASON_KEY = {"retrieval": "retrieval", "reader": "reader", "reader_language": "language_reason",
               "model_relevance_check": "model", "model_declined": "model", "verification": "verification"}


def speaks(language: str) -> str:
    """The language the app answers a person in: theirs where it speaks it, else English."""
    return language if language in LANGUAGES else "en"


def text(key: str, language: str = "en", **fmt: str) -> str:
    t = _TEXTS[key][speaks(language)]
    return t.format(**fmt) if fmt else t


def reason(decided_by: str, english: str, language: str) -> str:
    """An abstention's plain reason in the person's language (`english`: the policy's own)."""
    key = _REASON_KEY.get(decided_by)
    if key is None or speaks(language) == "en":
        return english
    return text(key, language)
