"""The shared lowest layer: text analysis (terms, stems, sentences, token counts) and
score fusion. It imports nothing above `rag_core.models`, so stores, retrieval, grounding
and generation can all use it without importing each other (DESIGN.md §2)."""
