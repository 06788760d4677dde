"""The offline scorer: Okapi BM25 over the tools' text, so filtering works with no network.

A tool's document is its name (split on `_`, `-` and camelCase, counted twice: a name says
more than a sentence), its description, and its top-level parameter names and descriptions.
Words are lower-cased, stop words dropped and a light suffix stemmer applied ("files",
"filed", "filing" -> "file"), the same way for queries. k1 = 1.2, b = 0.75, and the
non-negative IDF ln(1 + (N - df + 0.5) / (df + 0.5)). Scores are divided by the best score of
the query, so they are in [0, 1] like a cosine and a dependency boost means the same in both.

A query with no word any tool has gives no vector (`score` returns None): the caller then
filters nothing. Queries are cut to MAX_QUERY_CHARS (the builder already passes only the
start and the end of a long message).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

K1 = 1.2
B = 0.75
MAX_QUERY_CHARS = 20_000
_WORD = re.compile(r"[A-Za-z][a-z]+|[A-Z]+(?![a-z])|[a-z]+|\d+")
_STOP = (
    "a an and are as at be but by can do does for from has have how i if in into is it its "
    "me my no not of on or our please so than that the their them then there these this to "
    "us was we what when where which who why will with would you your"
)
STOP_WORDS = frozenset(_STOP.split(" "))


@lru_cache(maxsize=16384)
def stem(word: str) -> str:
    """A light suffix stripper: the same stem for a word's plural and -ing/-ed forms
    ("file", "files", "filing", "filed" -> "fil"; "match", "matches" -> "match")."""
    for suffix, keep in (("sses", "ss"), ("ies", "y"), ("ing", ""), ("ed", ""), ("ly", ""),
                         ("es", ""), ("s", "")):
        if not word.endswith(suffix) or len(word) - len(suffix) < 3:
            continue
        base = word[: len(word) - len(suffix)]
        if suffix == "es" and not base.endswith(("s", "x", "z", "ch", "sh")):
            continue  # "files" is "file" + "s"
        if suffix == "s" and base.endswith(("s", "u", "i")):
            break  # class, status, analysis
        word = base + keep
        if suffix in ("ing", "ed") and len(word) > 3 and word[-1] == word[-2] \
                and word[-1] not in "lsz":
            word = word[:-1]  # running -> run
        break
    return word[:-1] if len(word) > 3 and word.endswith("e") else word


def tokens(text: str) -> list[str]:
    """Lower-cased, stemmed words of `text`, stop words left out."""
    words = _WORD.findall(text)
    return [stem(w) for w in map(str.lower, words) if len(w) > 1 and w not in STOP_WORDS]


def tool_document(name: str, description: str, schema: Any) -> list[str]:
    words = tokens(name) * 2 + tokens(description)
    props = schema.get("properties") if isinstance(schema, dict) else None
    if isinstance(props, dict):
        for key, prop in props.items():
            words += tokens(str(key))
            if isinstance(prop, dict) and isinstance(prop.get("description"), str):
                words += tokens(prop["description"][:500])
    return words


class BM25Index:
    """Postings over a fixed list of documents (one per tool, in catalog order)."""

    def __init__(self, documents: Sequence[Sequence[str]]) -> None:
        self.size = len(documents)
        self.lengths = [len(d) for d in documents]
        average = sum(self.lengths) / self.size if self.size else 0.0
        self.postings: dict[str, list[tuple[int, int]]] = {}
        for index, document in enumerate(documents):
            for term, count in Counter(document).items():
                self.postings.setdefault(term, []).append((index, count))
        self.idf = {
            term: math.log(1 + (self.size - len(p) + 0.5) / (len(p) + 0.5))
            for term, p in self.postings.items()
        }
        # The length part of BM25's denominator, per document, computed once.
        self.norm = [
            K1 * (1 - B + B * (length / average if average else 0.0)) for length in self.lengths
        ]

    def has_vector(self, index: int) -> bool:
        return self.lengths[index] > 0

    def score(self, query: str) -> list[float] | None:
        """Each document's score in [0, 1], or None when no query word is in any document."""
        terms = set(tokens(query[:MAX_QUERY_CHARS]))
        scores = [0.0] * self.size
        matched = False
        for term in terms:
            postings = self.postings.get(term)
            if not postings:
                continue
            matched = True
            idf = self.idf[term]
            for index, count in postings:
                scores[index] += idf * count * (K1 + 1) / (count + self.norm[index])
        best = max(scores, default=0.0)
        if not matched or best <= 0:
            return None
        return [s / best for s in scores]
