"""Papers longer than the window: split between words, the title at the head of every window, the windows' vectors
combined; for plain encoders and families, both backends, and through sciembed embed."""

from __future__ import annotations

import json

import numpy as np
import pytest
from helpers import WORDS

import sciembed
from sciembed.encoders import WindowedEncoder, WindowSettings

LONG = {
    "paper_id": "long",
    "title": "Garbage collection",
    "abstract": " ".join(WORDS),
    "body": " ".join(reversed(WORDS)) + " " + " ".join(WORDS[::3]),
}
SHORT = {"paper_id": "short", "title": "Query join index", "abstract": "a database join"}


@pytest.fixture(scope="module")
def encoder(tiny_bert):
    return sciembed.PaperEncoder.from_pretrained(tiny_bert, device="cpu")


def token_count(encoder, text: str) -> int:
    return len(encoder.tokenizer(text, add_special_tokens=False)["input_ids"])


def test_a_paper_that_fits_is_embedded_as_the_encoder_embeds_it(encoder):
    windowed = WindowedEncoder(encoder)
    assert len(windowed.paper_windows(SHORT)) == 1
    np.testing.assert_allclose(
        windowed.encode([SHORT], show_progress_bar=False), encoder.encode([SHORT], show_progress_bar=False), atol=1e-6
    )


def test_windows_cover_the_text_between_words_with_the_title_first(encoder):
    settings = WindowSettings(window=24, overlap=6, text_fields=("title", "abstract", "body"))
    windowed = WindowedEncoder(encoder, settings)
    windows = windowed.paper_windows(LONG)
    head = f"{LONG['title']}{encoder.sep_token}"
    body = f"{LONG['abstract']}{encoder.sep_token}{LONG['body'].strip()}"
    assert len(windows) > 3
    words = body.replace(encoder.sep_token, " ").split()
    covered = []
    for text, tokens in windows:
        assert text.startswith(head)
        part = text[len(head) :]
        assert body.count(part) == 1  # a contiguous stretch of the text
        pieces = part.replace(encoder.sep_token, " ").split()
        assert pieces[0] in words and pieces[-1] in words  # cut between words
        assert tokens == token_count(encoder, part)
        assert token_count(encoder, text) + 2 <= 24  # the window holds [CLS] title [SEP] text [SEP]
        covered.append((body.find(part), body.find(part) + len(part)))
    assert covered[0][0] == 0 and covered[-1][1] == len(body)
    assert all(start < end_before for (_, end_before), (start, _) in zip(covered, covered[1:]))  # they overlap

    untitled = WindowedEncoder(encoder, WindowSettings(window=24, overlap=6, keep_title=False)).paper_windows(LONG)
    assert not any(text.startswith(head) for text, _ in untitled[1:]) and len(untitled) < len(windows)


@pytest.mark.parametrize("combine", ["mean", "tokens"])
def test_the_windows_vectors_are_combined(encoder, combine):
    windowed = WindowedEncoder(encoder, WindowSettings(window=20, overlap=4, combine=combine))
    windows = windowed.paper_windows(LONG)
    vectors = encoder.encode([text for text, _ in windows], show_progress_bar=False)
    weights = np.array([tokens if combine == "tokens" else 1 for _, tokens in windows], dtype=np.float64)
    expected = (vectors * weights[:, None]).sum(0) / weights.sum()
    got = windowed.encode([SHORT, LONG], show_progress_bar=False)
    np.testing.assert_allclose(got[1], expected, atol=1e-5)
    np.testing.assert_allclose(got[0], encoder.encode([SHORT], show_progress_bar=False)[0], atol=1e-6)
    assert not np.allclose(got[1], encoder.encode([LONG], show_progress_bar=False)[0], atol=1e-3)  # not the cut one


def test_unit_vector_encoders_stay_unit_vectors(tiny_bert):
    unit = sciembed.PaperEncoder.from_pretrained(tiny_bert, device="cpu", normalize=True)
    vectors = WindowedEncoder(unit, WindowSettings(window=20, overlap=4)).encode(
        [LONG, SHORT], show_progress_bar=False
    )
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_families_and_formats_embed_each_window_their_own_way(tiny_bert):
    from sciembed.families import from_bert

    model, tokenizer = from_bert("control_code", tiny_bert)
    codes = sciembed.PaperEncoder(model.eval(), tokenizer, device="cpu")
    windowed = WindowedEncoder(codes, WindowSettings(window=20, overlap=4, combine="mean")).with_format(
        "classification"
    )
    texts = [text for text, _ in windowed.paper_windows(LONG)]
    expected = codes.with_format("classification").encode(texts, show_progress_bar=False).mean(0)
    np.testing.assert_allclose(windowed.encode([LONG], show_progress_bar=False)[0], expected, atol=1e-5)
    assert windowed.task_formats == codes.task_formats
    proximity = WindowedEncoder(codes, WindowSettings(window=20, overlap=4)).encode([LONG], show_progress_bar=False)
    assert not np.allclose(proximity, expected, atol=1e-3)
    assert windowed.fingerprint() != WindowedEncoder(codes, WindowSettings(window=20, overlap=4)).fingerprint()


def test_the_onnx_backend_gives_the_same_windowed_vectors(tiny_bert, tmp_path):
    pytest.importorskip("onnxruntime")
    settings = WindowSettings(window=20, overlap=4)
    pytorch = WindowedEncoder(sciembed.PaperEncoder.from_pretrained(tiny_bert, device="cpu"), settings)
    onnx = WindowedEncoder(
        sciembed.PaperEncoder.from_pretrained(tiny_bert, device="cpu", backend="onnx", engine_cache=tmp_path), settings
    )
    np.testing.assert_allclose(
        onnx.encode([LONG, SHORT], show_progress_bar=False),
        pytorch.encode([LONG, SHORT], show_progress_bar=False),
        atol=1e-4,
    )


def test_bad_settings_are_named(encoder):
    with pytest.raises(ValueError, match="overlap must be 0 or more"):
        WindowSettings(overlap=-1)
    with pytest.raises(ValueError, match="combine must be one of"):
        WindowSettings(combine="max")
    with pytest.raises(ValueError, match=r"window 999 exceeds the \d+ tokens"):
        WindowedEncoder(encoder, WindowSettings(window=999))
    with pytest.raises(ValueError, match="an overlap of 30 tokens is the whole of a 24-token window"):
        WindowedEncoder(encoder, WindowSettings(window=24, overlap=30))


def test_embed_reads_the_text_fields_and_embeds_window_by_window(tiny_bert, tmp_path, caplog):
    from sciembed.cli import main
    from sciembed.io import read_embeddings

    papers = tmp_path / "papers.jsonl"
    papers.write_text("".join(json.dumps(p) + "\n" for p in (LONG, SHORT)))
    common = ["embed", "--model", str(tiny_bert), "--input", str(papers), "--device", "cpu", "--no-progress"]
    fields = ["--text-fields", "title", "abstract", "body"]
    assert (
        main(
            [
                *common,
                "--output",
                str(tmp_path / "w.npy"),
                "--long-documents",
                "--window-tokens",
                "20",
                "--window-overlap",
                "4",
                *fields,
            ]
        )
        == 0
    )
    assert main([*common, "--output", str(tmp_path / "cut.npy"), *fields]) == 0
    encoder = sciembed.PaperEncoder.from_pretrained(tiny_bert, device="cpu")
    settings = WindowSettings(window=20, overlap=4, text_fields=("title", "abstract", "body"))
    ids, vectors = read_embeddings(tmp_path / "w.npy")
    np.testing.assert_allclose(
        vectors, WindowedEncoder(encoder, settings).encode([LONG, SHORT], show_progress_bar=False), atol=1e-5
    )
    _, cut = read_embeddings(tmp_path / "cut.npy")
    body_text = encoder.sep_token.join([LONG["title"], LONG["abstract"], LONG["body"].strip()])
    np.testing.assert_allclose(cut[0], encoder.encode([body_text], show_progress_bar=False)[0], atol=1e-5)
    assert main([*common, "--output", str(tmp_path / "x.npy"), "--window-tokens", "20"]) != 0
    assert "--window-tokens sets the windows of --long-documents: give both" in caplog.text


def test_papers_the_settings_do_not_fit_are_windowed_otherwise_and_counted(encoder, caplog):
    """A title too long to repeat is read once, at the head of the text; windows that would overlap by more than half
    their text overlap by half. Both are counted and logged, never an error that stops a corpus."""
    titled = dict(LONG, paper_id="titled", title=" ".join(WORDS[:16]))  # leaves 5 of 22 tokens for the text
    windowed = WindowedEncoder(encoder, WindowSettings(window=24, overlap=4))
    windows = windowed.paper_windows(titled)
    assert windows[0][0].startswith(titled["title"]) and not any(t.startswith(titled["title"]) for t, _ in windows[1:])
    assert all(token_count(encoder, text) + 2 <= 24 for text, _ in windows)
    wide = WindowedEncoder(encoder, WindowSettings(window=24, overlap=16))  # the title leaves about 18 text tokens
    narrow = WindowedEncoder(encoder, WindowSettings(window=24, overlap=9))
    assert [w for w, _ in wide.paper_windows(LONG)] == [w for w, _ in narrow.paper_windows(LONG)]
    with caplog.at_level("WARNING", logger="sciembed.encoders.windows"):
        windowed.encode([titled, SHORT], show_progress_bar=False)
    assert windowed.adjusted["title_read_once"] == 2 and wide.adjusted["overlap_halved"] == 1
    assert "1 of 2 papers windowed otherwise: title read once 1" in caplog.text


def test_evaluate_embeds_long_documents_window_by_window(tiny_bert, tmp_path):
    """sciembed evaluate --long-documents scores the vectors of the windowed encoder (the same report as evaluating
    WindowedEncoder in Python), where the cut papers score otherwise."""
    from sciembed.cli import main
    from sciembed.evaluation import evaluate

    folder = tmp_path / "beir"
    (folder / "qrels").mkdir(parents=True)
    rng = np.random.default_rng(0)
    corpus = {
        f"d{i}": {"title": f"{WORDS[i]} {WORDS[i + 1]}", "text": " ".join(rng.choice(WORDS, 60))} for i in range(12)
    }
    (folder / "corpus.jsonl").write_text("".join(json.dumps({"_id": k, **v}) + "\n" for k, v in corpus.items()))
    queries = {f"q{i}": " ".join(WORDS[i : i + 4]) for i in range(4)}
    (folder / "queries.jsonl").write_text(
        "".join(json.dumps({"_id": q, "text": t}) + "\n" for q, t in queries.items())
    )
    (folder / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\n" + "".join(f"q{i}\td{2 * i}\t1\nq{i}\td{2 * i + 1}\t1\n" for i in range(4))
    )
    out = tmp_path / "report.json"
    args = ["evaluate", "--model", str(tiny_bert), "--benchmark", "beir", "--data", str(folder), "--no-cache"]
    windows = ["--long-documents", "--window-tokens", "20", "--window-overlap", "4", "--no-progress"]
    assert main([*args, *windows, "--device", "cpu", "--output", str(out)]) == 0
    got = json.loads(out.read_text())["results"]
    encoder = sciembed.PaperEncoder.from_pretrained(tiny_bert, device="cpu")
    windowed = WindowedEncoder(encoder, WindowSettings(window=20, overlap=4))
    expected = evaluate(windowed, "beir", folder, use_cache=False, show_progress_bar=False).to_dict()["results"]
    cut = evaluate(encoder, "beir", folder, use_cache=False, show_progress_bar=False).to_dict()["results"]
    assert [r["metric"] for r in got] == [r["metric"] for r in expected]
    assert [r["value"] for r in got] == pytest.approx([r["value"] for r in expected], abs=1e-9)
    assert [r["value"] for r in got] != pytest.approx([r["value"] for r in cut], abs=1e-6)
