"""Keyword analysis per language (rag_core/text/analysis.py)."""

from __future__ import annotations

from rag_core.text.analysis import analyze, query_terms


def shared(a: str, a_lang: str, b: str, b_lang: str) -> set[str]:
    return set(analyze(a, a_lang)) & set(analyze(b, b_lang))


def test_english_reads_exactly_as_before_languages():
    # what an index from before languages holds: folded, English stop words out, Porter 2 stems
    assert analyze("How do I change my passwords? Café") == ["chang", "password", "cafe"]
    assert analyze("How do I change my passwords? Café", "en") == analyze("How do I change my passwords? Café")
    assert query_terms("How do I change my password?", ("en",)) == ["chang", "password"]


def test_german_inflected_forms_meet():
    assert shared("Wie ändere ich mein Passwort?", "de", "Die Passwörter werden regelmäßig geändert.", "de") >= {"passwort"}
    assert "ich" not in analyze("Wie ändere ich mein Passwort?", "de")  # German stop words
    assert shared("Urlaubsanträge", "de", "Ein Urlaubsantrag", "de")


def test_accents_fold_where_the_language_expects_it_and_only_there():
    assert shared("¿Cómo cambio la contraseña?", "es", "como cambiar la contrasena", "es") >= {"contrasen"}
    assert analyze("été", "fr") == analyze("ete", "fr")
    assert analyze("йогурт", "ru") != analyze("иогурт", "ru")  # й is a letter of its own
    assert analyze("Käse", "fi") != analyze("Kase", "fi")


def test_japanese_is_words_and_chinese_bigrams_with_voicing_marks_kept():
    ja = analyze("パスワードを変更するにはどうすればいいですか", "ja")
    assert "パスワード" in ja and "変更" in ja and "を" not in ja  # words, particles dropped
    assert "ガイド" in analyze("ｶﾞｲﾄﾞ", "ja")  # half-width kana normalised, the voicing mark kept
    assert "カイ" not in analyze("ガイド", "zh") and "ガイ" in analyze("ガイド", "zh")  # bigrams outside Japanese
    assert "密码" in analyze("如何更改我的密码？", "zh")
    # a Latin word inside Japanese text is still a word
    assert "sudo" in analyze("sudoの設定ファイル", "ja")


def test_a_question_is_read_in_its_own_language_and_the_documents():
    terms = query_terms("Wie ändere ich mein Passwort?", ("en",))
    assert "passwort" in terms and "ander" in terms  # German stems
    assert "ich" in terms  # what the English reading adds (not an English stop word)
    assert query_terms("gnuplot set terminal png", ("en",)) == analyze("gnuplot set terminal png")


def test_threads_that_come_and_go_share_the_japanese_taggers():
    """A server's worker threads are stopped when idle and new ones started: each new thread
    must reuse an idle MeCab tagger (each maps UniDic's ~260 MB), not make its own. Twenty
    threads one after another leave at most the taggers that already existed plus one."""
    import threading

    from rag_core.text import analysis

    analysis.analyze("データフレームとは何ですか", "ja")
    before = analysis._JA_IDLE.qsize()
    words = []
    for _ in range(20):
        t = threading.Thread(target=lambda: words.append(analysis._ja_words("東京都の人口は何人ですか")))
        t.start()
        t.join(30)
    assert len(words) == 20 and all(w == words[0] and w for w in words)
    assert analysis._JA_IDLE.qsize() <= max(before, 1)
