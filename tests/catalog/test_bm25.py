"""The offline scorer: tokens, ranking, no vector without a shared word."""

from __future__ import annotations

from acpd.tools.catalog.bm25 import BM25Index, stem, tokens, tool_document

TOOLS = {
    "read_file": "Read a text file from the workspace",
    "git_commit": "Record staged changes in the git repository with a message",
    "run_tests": "Run the project's test suite and report failing tests",
    "http_get": "Fetch a URL over HTTPS and return the body",
    "kubectl_apply": "Apply a Kubernetes manifest to the cluster",
}


def index() -> tuple[list[str], BM25Index]:
    names = list(TOOLS)
    return names, BM25Index([tool_document(n, d, {}) for n, d in TOOLS.items()])


def test_tokens_split_identifiers_and_stem() -> None:
    assert tokens("readFile read_file HTTPServer") == [
        "read", "fil", "read", "fil", "http", "server"]
    for forms in (["file", "files", "filing", "filed"], ["test", "tests", "testing", "tested"],
                  ["match", "matches", "matching"], ["run", "runs", "running"],
                  ["update", "updates", "updating", "updated"], ["directory", "directories"]):
        assert len({stem(w) for w in forms}) == 1, forms
    assert stem("class") == "class" and stem("status") == "status"
    assert tokens("the and of a") == []


def test_the_relevant_tool_ranks_first() -> None:
    names, idx = index()
    for query, best in [
        ("commit my staged changes", "git_commit"),
        ("why are the tests failing?", "run_tests"),
        ("apply this manifest to the cluster", "kubectl_apply"),
        ("fetch https://example.com", "http_get"),
    ]:
        scores = idx.score(query)
        assert scores is not None
        assert names[scores.index(max(scores))] == best, query
        assert max(scores) == 1.0 and min(scores) >= 0.0


def test_no_shared_word_is_no_vector() -> None:
    _, idx = index()
    assert idx.score("bonjour tout le monde") is None
    assert idx.score("") is None
    assert idx.score("the of and") is None


def test_parameters_count_and_empty_documents_have_no_vector() -> None:
    schema = {"properties": {"namespace": {"description": "Kubernetes namespace"}}}
    idx = BM25Index([tool_document("deploy", "Ship it", schema), []])
    assert idx.has_vector(0) and not idx.has_vector(1)
    scores = idx.score("which namespace?")
    assert scores is not None and scores[0] == 1.0 and scores[1] == 0.0


def test_a_huge_query_is_cut() -> None:
    _, idx = index()
    scores = idx.score("commit " + "zzz " * 100_000 + "kubernetes")
    assert scores is not None  # scored on the first MAX_QUERY_CHARS only
