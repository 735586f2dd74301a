"""The HTTP API (DESIGN.md §6b): `python -m rag_core serve`. Needs fastapi and uvicorn
(requirements.txt); nothing else in rag_core imports this package."""
