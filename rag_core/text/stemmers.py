"""The languages the keyword analysis stems (Snowball, through PyStemmer) and the ones whose
readers type without accents: read by analysis.py (how terms are made) and language.py
(which detected languages are worth acting on), so neither imports the other for it."""

SNOWBALL = {
    "en": "english", "de": "german", "fr": "french", "es": "spanish", "it": "italian", "pt": "portuguese",
    "nl": "dutch", "da": "danish", "sv": "swedish", "no": "norwegian", "fi": "finnish", "ru": "russian",
    "hu": "hungarian", "ro": "romanian", "tr": "turkish", "ar": "arabic", "el": "greek", "ca": "catalan",
    "eu": "basque", "id": "indonesian", "ga": "irish", "lt": "lithuanian", "ne": "nepali", "hi": "hindi",
    "ta": "tamil", "hy": "armenian", "yi": "yiddish", "sr": "serbian", "cs": "czech", "pl": "polish",
    "et": "estonian", "fa": "persian", "eo": "esperanto",
}
# Latin-script languages whose readers type without accents (module docstring).
FOLDED = frozenset({"en", "de", "fr", "es", "it", "pt", "nl", "ca", "ro", "eu", "id", "ga"})
