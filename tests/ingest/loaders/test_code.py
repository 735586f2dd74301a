"""Source code (rag_core/ingest/loaders/code.py, issue 53): the language read from the file
name, the file cut at its functions and classes by the language's grammar (tree-sitter),
each passage filed under the definition it holds, with its lines in the file."""

from __future__ import annotations

import re

import pytest

from rag_core.errors import LoadError
from rag_core.ingest.chunker import chunk_document

from .util import load_one, write

SAMPLES = {  # file → (its text, the first line of each definition it holds)
    "loader.py": ('"""Reading tables."""\nimport csv\n\n\n# Parse rows.\n@cache\ndef read_csv(path, sep=","):\n'
                  '    """Return a list of dicts."""\n    return list(csv.DictReader(open(path)))\n\n\n'
                  'class TableCache:\n    """Keeps tables."""\n\n    def get(self, path):\n        return self.t[path]\n',
                  ['def read_csv(path, sep=","):', "class TableCache:"]),
    "users.js": ("// User lookups.\nexport async function getUserById(id) {\n  return db.get(id);\n}\n\n"
                 "export const deleteUser = async (id) => {\n  await db.del(id);\n};\n",
                 ["export async function getUserById(id) {", "export const deleteUser = async (id) => {"]),
    "a.ts": ('import { db } from "./db";\n\ninterface User { id: number; name: string }\n\n'
             "export function findUser(id: number): User {\n  return db.get(id);\n}\n",
             ["interface User { id: number; name: string }", "export function findUser(id: number): User {"]),
    "a.go": ('package users\n\nimport "fmt"\n\n// FindUser looks a user up.\nfunc FindUser(id int) string {\n'
             "\treturn fmt.Sprint(id)\n}\n\ntype Store struct {\n\trows map[int]string\n}\n",
             ["func FindUser(id int) string {", "type Store struct {"]),
    "Prices.java": ("package shop;\n\n/** Prices in cents. */\npublic class Prices {\n    private int base = 100;\n\n"
                    "    public int withTax(int rate) {\n        return base + base * rate / 100;\n    }\n}\n",
                    ["public class Prices {"]),
    "a.c": ("#include <stdio.h>\n\n/* Add two numbers. */\nint add(int a, int b) {\n    return a + b;\n}\n\n"
            "struct point { int x; int y; };\n", ["int add(int a, int b) {", "struct point { int x; int y; };"]),
    "a.cpp": ("#include <vector>\n\nnamespace geo {\nclass Shape {\n public:\n  virtual double area() const = 0;\n};\n}\n\n"
              "double total(const std::vector<double>& v) {\n  double s = 0; for (double x : v) s += x; return s;\n}\n",
              ["namespace geo {", "double total(const std::vector<double>& v) {"]),
    "a.rs": ("use std::fmt;\n\n/// A point.\npub struct Point { x: f64, y: f64 }\n\nimpl Point {\n"
             "    pub fn norm(&self) -> f64 {\n        (self.x * self.x + self.y * self.y).sqrt()\n    }\n}\n",
             ["pub struct Point { x: f64, y: f64 }", "impl Point {"]),
    "a.rb": ('require "json"\n\n# Parses orders.\nclass OrderParser\n  def parse(text)\n    JSON.parse(text)\n  end\nend\n',
             ["class OrderParser"]),
    "a.cs": ("using System;\n\nnamespace Shop {\n    public class Cart {\n        public int Count() { return 0; }\n    }\n}\n",
             ["namespace Shop {"]),
    "a.php": ('<?php\n// Greets a person.\nfunction greet($name) {\n    return "Hello " . $name;\n}\n',
              ["function greet($name) {"]),
    "backup.sh": ("#!/bin/sh\nset -e\n\n# Back up the database.\nbackup() {\n  pg_dump shop > shop.sql\n}\n", ["backup() {"]),
    "schema.sql": ("-- Accounts.\nCREATE TABLE accounts (\n  id INTEGER PRIMARY KEY,\n  email TEXT\n);\n\n"
                   "INSERT INTO accounts (id, email) VALUES (1, 'a@example.org');\n",
                   ["CREATE TABLE accounts ("]),
}
LANGUAGE = {"py": "python", "js": "javascript", "ts": "typescript", "go": "go", "java": "java", "c": "c",
            "cpp": "cpp", "rs": "rust", "rb": "ruby", "cs": "csharp", "php": "php", "sh": "bash", "sql": "sql"}


def sections(doc) -> list[str]:
    return [c.section for c in chunk_document(doc, doc_id="d", kb_id="k")]


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_each_definition_is_a_passage_of_its_own_in_its_language(tmp_path, name):
    text, definitions = SAMPLES[name]
    doc = load_one(write(tmp_path, name, text))
    language = LANGUAGE[name.rsplit(".", 1)[1]]
    assert doc.metadata["code_language"] == language and doc.title == name
    chunks = chunk_document(doc, doc_id="d", kb_id="k")
    assert all(c.chunk_type == "code" for c in chunks)
    lines = text.split("\n")
    for first_line in definitions:
        held = [c for c in chunks if c.section.startswith(first_line)]
        assert len(held) == 1, (first_line, [c.section for c in chunks])
        c = held[0]
        assert f"```{language}\n" in c.text  # shown as code, in its language
        # the heading's line numbers are the definition's lines in the file
        m = re.search(r"lines? (\d+)(?:–(\d+))?$", c.section)
        first, last = int(m.group(1)), int(m.group(2) or m.group(1))
        assert lines[first - 1].strip() == first_line or lines[first - 1].lstrip().startswith(("#", "/", "-", "@"))
        assert first_line in lines[first - 1: last]
        # no other definition shares its passage
        assert not any(other in c.text for other in definitions if other != first_line)


def test_comments_and_docstrings_stand_as_prose_before_the_code(tmp_path):
    doc = load_one(write(tmp_path, "loader.py", SAMPLES["loader.py"][0]))
    chunk = next(c for c in chunk_document(doc, doc_id="d", kb_id="k") if c.section.startswith("def read_csv"))
    prose, code = chunk.text.split("```python\n", 1)
    assert "Parse rows. Return a list of dicts." in prose
    assert code.startswith("# Parse rows.\n@cache\ndef read_csv(")  # the code itself is unchanged


def test_a_long_class_is_cut_at_its_methods(tmp_path):
    methods = "".join(f"    def step_{i}(self, rows):\n        \"\"\"Step {i} of the import.\"\"\"\n"
                      + "".join(f"        rows = [r + {j} for r in rows]\n" for j in range(8)) + "        return rows\n\n"
                      for i in range(6))
    text = f"class Importer:\n    \"\"\"Imports rows.\"\"\"\n\n    batch = 500\n\n{methods}"
    assert len(text) > 2000
    doc = load_one(write(tmp_path, "importer.py", text))
    secs = sections(doc)
    assert secs[0].startswith("class Importer: — lines 1–")  # the header names the whole class's lines
    for i in range(6):
        own = [s for s in secs if f"def step_{i}(self, rows):" in s]
        assert own and all(s.startswith("class Importer:") and " > " in s for s in own)


def test_a_file_of_only_white_space_is_refused_with_a_reason(tmp_path):
    with pytest.raises(LoadError, match="empty"):
        load_one(write(tmp_path, "empty.py", "\n\n   \n"))


def test_a_file_the_grammar_cannot_read_is_still_kept_whole(tmp_path):
    text = "def broken(:\n    return ((\n" * 3
    doc = load_one(write(tmp_path, "broken.py", text))
    assert "def broken(:" in doc.pages[0] and "```python" in doc.pages[0]
