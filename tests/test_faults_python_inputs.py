"""Papers and queries given in Python (issue 51, items 4 and 5): one text or record is one input and one vector, a
DataFrame is its rows, any other type a TypeError saying what is taken; records are checked as the readers check a
file's, colliding ids refused by position. A property test runs every Python entry point over random inputs of
every accepted shape and id type, and over types that are not taken, on a tiny model.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from helpers import PAPERS
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sciembed
from sciembed import InvalidPaperError
from sciembed.data.papers import PaperReading
from sciembed.encoders import EnsembleEncoder, WindowedEncoder
from sciembed.evaluation.benchmarks import Reading, RetrievalOptions
from sciembed.evaluation.runner import evaluate
from sciembed.io import read_embeddings
from sciembed.jobs.embed import embed_to_file

# 4. A string, a record or a DataFrame embedded item by item --------------------------------------------------


def test_one_text_or_record_is_one_vector_and_a_frame_its_rows(tiny_encoder):
    query = "a query about garbage collection of list structure in a time sharing system"
    one = tiny_encoder.encode([query], show_progress_bar=False)
    assert sciembed.encode(tiny_encoder, query, show_progress_bar=False).shape == one[0].shape == (32,)
    assert tiny_encoder.encode_query(query, show_progress_bar=False).shape == (32,)
    assert tiny_encoder.encode_document(PAPERS[0], show_progress_bar=False).shape == (32,)
    rows = tiny_encoder.encode(PAPERS, show_progress_bar=False)
    frame = pd.DataFrame(PAPERS)
    frame.loc[1, "abstract"] = None  # a missing cell is no text, not "nan"
    np.testing.assert_allclose(tiny_encoder.encode(frame, show_progress_bar=False), rows, atol=1e-5)
    for encoder in (EnsembleEncoder([tiny_encoder, tiny_encoder]), WindowedEncoder(tiny_encoder)):
        np.testing.assert_allclose(encoder.encode(query, show_progress_bar=False), one[0], atol=1e-5)


def test_a_missing_value_of_a_frame_s_records_is_no_text_not_nan(tiny_encoder):
    records = pd.DataFrame([PAPERS[0], {"paper_id": "p9", "title": "Graphs"}]).to_dict("records")
    vectors = tiny_encoder.encode(records, show_progress_bar=False)
    np.testing.assert_allclose(vectors[1], tiny_encoder.encode(["Graphs"], show_progress_bar=False)[0], atol=1e-5)


def test_one_query_id_is_one_query_paper(tiny_encoder):
    result = sciembed.neighbours(tiny_encoder, PAPERS, top_k=2, query_ids="p3", show_progress_bar=False)
    assert result.query_ids == ["p3"]


def test_neighbours_takes_the_model_first_and_refuses_papers_in_its_place(tiny_encoder, tmp_path, monkeypatch):
    papers = tmp_path / "papers.jsonl"
    pd.DataFrame(PAPERS).to_json(papers, orient="records", lines=True)
    result = sciembed.neighbours(tiny_encoder, papers, top_k=2, show_progress_bar=False)
    assert result.top_k == 2 and result.indices.shape == (5, 2)
    monkeypatch.setattr(sciembed.Encoder, "from_pretrained", lambda *a, **k: pytest.fail("a model was loaded"))
    order = r"neighbours\(model, papers, \.\.\.\) takes the model first"
    for model, second in [
        (PAPERS, tiny_encoder),  # records first, an encoder second
        (str(papers), tiny_encoder),
        (papers, "sentence-transformers/all-MiniLM-L6-v2"),  # a papers file where the model goes
        (str(papers), None),
        (pd.DataFrame(PAPERS), None),
        ("some-model", tiny_encoder),
        (tmp_path / "missing.jsonl", "some-model"),  # a papers file by its name
    ]:
        with pytest.raises(TypeError, match=order):
            sciembed.neighbours(model, second, top_k=2)


@pytest.mark.parametrize(
    "papers, message",
    [
        (b"a query", "got bytes: decode it to text first"),
        (3, "got int"),
        (None, "got NoneType"),
        ({"a query"}, "got a set, which has no order: give a list"),
        (np.array([0.5, 1.5]), "got an array of float64"),
        (["a query", ["nested"]], "item #1 is list"),
    ],
)
def test_inputs_of_other_types_are_a_type_error_before_the_model_loads(tmp_path, papers, message):
    with pytest.raises(TypeError, match=message):
        sciembed.encode(tmp_path / "no-model-here", papers)


@pytest.mark.parametrize("spec", [{"members": "model"}, {"members": ["model", 5]}, {"members": [None]}, [1], {}])
def test_an_ensemble_s_members_not_a_list_of_models_are_named(tiny_bert, tmp_path, spec):
    import json
    import shutil

    shutil.copytree(tiny_bert, tmp_path / "model")
    (tmp_path / "sciembed_ensemble.json").write_text(json.dumps(spec))
    with pytest.raises(ValueError, match=r"sciembed_ensemble\.json: (members = .* is not a list of models|not an en)"):
        sciembed.Encoder.from_pretrained(tmp_path)


def test_an_ensemble_member_that_does_not_load_is_named_with_the_ensemble_file(tiny_bert, tmp_path):
    import json
    import shutil

    shutil.copytree(tiny_bert, tmp_path / "ensemble" / "a")
    (tmp_path / "ensemble" / "sciembed_ensemble.json").write_text(json.dumps({"members": ["a", "../../elsewhere"]}))
    with pytest.raises(ValueError, match=r"sciembed_ensemble\.json: member 2 \('\.\./\.\./elsewhere'.*does not load"):
        sciembed.Encoder.from_pretrained(tmp_path / "ensemble")


# 5. Records given in Python whose ids collide ----------------------------------------------------------------


@pytest.mark.parametrize("second", [1, "1", " 1"], ids=["int", "str", "padded"])
def test_colliding_ids_in_records_are_refused_naming_their_positions(tiny_encoder, tmp_path, second):
    records = [{**PAPERS[0], "paper_id": "1"}, {**PAPERS[1], "paper_id": second}, {**PAPERS[2], "paper_id": 2}]
    named = r"record #1 \(paper_id '1'\): duplicate paper_id \(first at record #0\)"
    with pytest.raises(InvalidPaperError, match=named):
        sciembed.neighbours(tiny_encoder, records, top_k=1, show_progress_bar=False)
    with pytest.raises(InvalidPaperError, match=named):
        embed_to_file(tiny_encoder, iter(records), tmp_path / "out.jsonl", show_progress_bar=False)
    assert list(tmp_path.iterdir()) == []
    report = embed_to_file(
        tiny_encoder, records, tmp_path / "out.jsonl", reading=PaperReading(skip_invalid=True), show_progress_bar=False
    )
    assert read_embeddings(tmp_path / "out.jsonl")[0] == ["1", "2"] and report.skipped[0].location == "record #1"


def test_ids_as_keys_and_numpy_integers_are_ids_by_the_same_rule(tiny_encoder, tmp_path):
    keyed = {key: {"title": f"Paper {key}"} for key in [" 1", "1", "2"]}
    with pytest.raises(
        InvalidPaperError, match=r"record #1 \(paper_id '1'\): duplicate paper_id \(first at record #0"
    ):
        sciembed.neighbours(tiny_encoder, keyed, top_k=1, show_progress_bar=False)
    numbered = [{**PAPERS[i], "paper_id": np.int64(i)} for i in range(3)]
    embed_to_file(
        tiny_encoder,
        numbered + [{**PAPERS[3], "paper_id": " 2"}],
        tmp_path / "o.jsonl",
        reading=PaperReading(skip_invalid=True),
    )
    assert read_embeddings(tmp_path / "o.jsonl")[0] == ["0", "1", "2"]
    found = sciembed.neighbours(tiny_encoder, numbered, query_ids=np.array([2]), top_k=1, show_progress_bar=False)
    assert found.query_ids == ["2"]


def test_a_dataset_is_checked_in_place_and_stays_memory_mapped_when_valid(tiny_encoder, tmp_path, monkeypatch):
    import datasets

    import sciembed.jobs.embed as job

    records = [{**PAPERS[i], "paper_id": f"p{i}"} for i in range(3)]
    colliding = datasets.Dataset.from_list([*records, {**PAPERS[3], "paper_id": "p0"}])
    with pytest.raises(InvalidPaperError, match=r"record #3 \(paper_id 'p0'\): duplicate paper_id"):
        embed_to_file(tiny_encoder, colliding, tmp_path / "bad.jsonl", show_progress_bar=False)
    numbered = datasets.Dataset.from_list([{**record, "paper_id": i} for i, record in enumerate(records)])
    embed_to_file(tiny_encoder, numbered, tmp_path / "numbered.jsonl", show_progress_bar=False)
    assert read_embeddings(tmp_path / "numbered.jsonl")[0] == ["0", "1", "2"]
    monkeypatch.setattr(job, "paper_records", lambda *args, **kwargs: pytest.fail("a valid Dataset was copied"))
    embed_to_file(tiny_encoder, datasets.Dataset.from_list(records), tmp_path / "out.jsonl", show_progress_bar=False)
    assert read_embeddings(tmp_path / "out.jsonl")[0] == ["p0", "p1", "p2"]


def test_a_paper_that_is_its_title_alone_gets_its_vector_through_windows(tiny_encoder):
    title_only = {"title": "Graphs", "abstract": ""}
    vectors = WindowedEncoder(tiny_encoder).encode([title_only, ""], show_progress_bar=False)
    np.testing.assert_allclose(vectors, tiny_encoder.encode([title_only, ""], show_progress_bar=False), atol=1e-5)


def test_a_record_without_an_id_is_named_by_its_position(tiny_encoder):
    with pytest.raises(InvalidPaperError, match=r"record #2: no paper id"):
        sciembed.neighbours(tiny_encoder, [PAPERS[0], PAPERS[1], {"title": "Graphs"}], show_progress_bar=False)
    with pytest.raises(ValueError, match=r"^record #1 has neither a title nor an abstract$"):
        tiny_encoder.encode(["a query", {"title": "", "abstract": None}], show_progress_bar=False)
    with pytest.raises(
        ValueError, match=r"record #0 has neither .* \(its fields: a, b\); .* give texts as a str or a"
    ):
        tiny_encoder.encode({"a": "text a", "b": "text b"}, show_progress_bar=False)  # texts by key: not a record


# The property: every entry point, every accepted shape, every id type ----------------------------------------

PROPERTY = settings(
    max_examples=30,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

_WORD = st.sampled_from(["graph", "citation", "memory", "query", "index", "model", "text", ""])
_TEXT = st.lists(_WORD, min_size=1, max_size=6).map(" ".join)
_RECORD = st.fixed_dictionaries({"title": _TEXT, "abstract": st.one_of(_TEXT, st.none())}).filter(
    lambda r: (r["title"] or r["abstract"] or "").strip()
)
_ITEM = st.one_of(_TEXT, _RECORD)
_SHAPES = ("list", "tuple", "generator", "frame", "mapping")


def _shaped(items: list, shape: str):
    """``items`` in one of the shapes the entry points take."""
    if shape == "tuple":
        return tuple(items)
    if shape == "generator":
        return (item for item in items)
    if shape == "frame":
        return pd.DataFrame(items, dtype=object)  # ids as given: a column of ints and floats stays one
    if shape == "mapping":
        return {f"k{i}": item for i, item in enumerate(items)}
    return list(items)


def _entry_points(encoder):
    windowed = WindowedEncoder(encoder)
    ensemble = EnsembleEncoder([encoder, encoder])
    return {
        "sciembed.encode": lambda papers: sciembed.encode(encoder, papers, show_progress_bar=False),
        "encode": lambda papers: encoder.encode(papers, show_progress_bar=False),
        "encode_query": lambda papers: encoder.encode_query(papers, show_progress_bar=False),
        "encode_document": lambda papers: encoder.encode_document(papers, show_progress_bar=False),
        "ensemble": lambda papers: ensemble.encode(papers, show_progress_bar=False),
        "windows": lambda papers: windowed.encode(papers, show_progress_bar=False),
    }


@PROPERTY
@given(
    items=st.lists(_ITEM, min_size=1, max_size=4),
    shape=st.sampled_from(_SHAPES),
    entry=st.sampled_from(["sciembed.encode", "encode", "encode_query", "encode_document", "ensemble", "windows"]),
)
def test_every_entry_point_gives_a_row_per_input_each_as_if_alone(tiny_encoder, items, shape, entry):
    if shape in ("frame", "mapping"):
        items = [item for item in items if isinstance(item, dict)] or [{"title": "graph"}]
    encode = _entry_points(tiny_encoder)[entry]
    alone = [encode(item) for item in items]
    assert all(vector.shape == (32,) for vector in alone)
    rows = encode(_shaped(items, shape))
    assert rows.shape == (len(items), 32) and np.isfinite(rows).all()
    np.testing.assert_allclose(rows, np.stack(alone), atol=1e-5)


# Mostly integers and texts, so that accepted id lists come often enough beside colliding and bad ones.
_ID = st.one_of(
    st.integers(0, 10**6),
    st.integers(0, 10**6),
    st.text("ab1 ", min_size=1, max_size=3),
    st.text("ab1 ", min_size=1, max_size=3),
    st.sampled_from([1.5, True, None, ""]),
)


@settings(PROPERTY, max_examples=60)
@given(ids=st.lists(_ID, min_size=2, max_size=4), shape=st.sampled_from(["list", "generator", "frame"]))
def test_ids_come_out_in_order_and_colliding_or_bad_ids_are_named(tiny_encoder, ids, shape):
    records = [{**PAPERS[i % len(PAPERS)], "paper_id": paper_id} for i, paper_id in enumerate(ids)]
    expected, first, problem = [], {}, None
    for index, paper_id in enumerate(ids):
        if paper_id in (None, ""):
            problem = f"record #{index}: no paper id"
        elif isinstance(paper_id, bool) or not isinstance(paper_id, (str, int)):
            problem = f"record #{index}: paper id must be a string or integer"
        elif not str(paper_id).strip():
            problem = f"record #{index}: empty paper id"
        elif str(paper_id).strip() in first:
            earlier = first[str(paper_id).strip()]
            problem = f"record #{index} (paper_id {str(paper_id).strip()!r}): duplicate paper_id (first at {earlier})"
        else:
            first[str(paper_id).strip()] = f"record #{index}"
            expected.append(str(paper_id).strip())
            continue
        break
    for run in (_neighbour_ids, _embedded_ids):
        if problem is None:
            assert run(tiny_encoder, _shaped(records, shape)) == expected
        else:
            with pytest.raises(InvalidPaperError) as raised:
                run(tiny_encoder, _shaped(records, shape))
            assert problem in str(raised.value)


def _neighbour_ids(encoder, papers) -> list[str]:
    return sciembed.neighbours(encoder, papers, top_k=1, show_progress_bar=False).ids


def _embedded_ids(encoder, papers) -> list[str]:
    with tempfile.TemporaryDirectory() as folder:
        embed_to_file(encoder, papers, Path(folder) / "out.jsonl", show_progress_bar=False)
        return read_embeddings(Path(folder) / "out.jsonl")[0]


_NOT_TAKEN = st.one_of(
    st.binary(max_size=8),
    st.integers(),
    st.floats(allow_nan=False),
    st.none(),
    st.sets(_TEXT, min_size=1, max_size=3),
    st.lists(st.lists(_TEXT, min_size=1, max_size=2), min_size=1, max_size=3),
    st.lists(st.integers(), min_size=1, max_size=3).map(np.array),
    st.lists(st.one_of(st.integers(), st.none(), st.binary(max_size=4)), min_size=1, max_size=3).map(
        lambda bad: ["graph", *bad]
    ),
)


@PROPERTY
@given(papers=_NOT_TAKEN)
def test_types_not_taken_are_a_type_error_saying_what_is(tiny_encoder, tmp_path, papers):
    calls = [
        *_entry_points(tiny_encoder).values(),
        lambda given: sciembed.neighbours(tiny_encoder, given, show_progress_bar=False),
        lambda given: embed_to_file(tiny_encoder, given, tmp_path / "out.jsonl", show_progress_bar=False),
    ]
    for call in calls:
        with pytest.raises(TypeError, match=r"must be a text|item #\d+ is"):
            call(papers)
    assert list(tmp_path.iterdir()) == []


def test_one_id_given_to_the_training_examples_is_one_paper(tmp_path):
    from helpers import write_s2orc

    from sciembed.training.examples import pair_dataset, read_citation_source, triplet_dataset

    source = read_citation_source(write_s2orc(tmp_path / "metadata.jsonl"))
    one = triplet_dataset(source, queries="p1", exclude="p2", seed=3)
    assert (
        set(one["query_id"]) == {"p1"}
        and one.to_list() == triplet_dataset(source, queries=["p1"], exclude=["p2"], seed=3).to_list()
    )
    pairs = pair_dataset(source, kind="citations", queries="p1", exclude="p2")
    assert all("p1" in (a, b) and "p2" not in (a, b) for a, b in zip(pairs["a_id"], pairs["b_id"]))
    with pytest.raises(TypeError, match=r"queries must be a paper id \(str or int\) or a list of them, got set"):
        triplet_dataset(source, queries={"p1"})


def test_a_frame_s_row_is_one_record_and_a_column_of_texts_its_items(tiny_encoder):
    frame = pd.DataFrame([{**PAPERS[i], "paper_id": f"p{i}"} for i in range(2)])
    row = tiny_encoder.encode(frame.iloc[0], show_progress_bar=False)
    assert row.shape == (tiny_encoder.encode([PAPERS[0]], show_progress_bar=False).shape[1],)
    np.testing.assert_allclose(row, tiny_encoder.encode(frame, show_progress_bar=False)[0], atol=1e-5)
    assert tiny_encoder.encode(frame["title"], show_progress_bar=False).shape[0] == 2


def test_integer_ids_of_a_frame_with_a_missing_one_are_named_where_it_is_missing(tiny_encoder):
    frame = pd.DataFrame([{**PAPERS[0], "paper_id": 1}, {**PAPERS[1], "paper_id": 2}, {**PAPERS[2], "paper_id": None}])
    with pytest.raises(InvalidPaperError, match=r"record #2: no paper id"):
        sciembed.neighbours(tiny_encoder, frame, top_k=1, show_progress_bar=False)


def test_text_fields_given_with_records_are_checked_as_a_file_s(tiny_encoder, tmp_path):
    fields = ["title", "abstract", "keywords"]
    absent = r"papers given in Python: no paper has text in keywords, named as a text field"
    with pytest.raises(ValueError, match=absent):
        sciembed.neighbours(tiny_encoder, PAPERS, top_k=1, reading=PaperReading(text_fields=fields))
    with pytest.raises(ValueError, match=absent):
        embed_to_file(
            tiny_encoder, PAPERS, tmp_path / "o.jsonl", reading=PaperReading(text_fields=fields), use_cache=False
        )
    with pytest.raises(InvalidPaperError, match=r"record #2 \(paper_id 'p3'\): no text in title; it has"):
        sciembed.neighbours(tiny_encoder, PAPERS, top_k=1, reading=PaperReading(text_fields=["title"]))


def test_one_string_of_text_fields_is_one_field(tiny_encoder, tmp_path):
    titled = [paper for paper in PAPERS if paper["title"]]
    one = sciembed.neighbours(
        tiny_encoder, titled, top_k=1, reading=PaperReading(text_fields="title"), show_progress_bar=False
    )
    listed = sciembed.neighbours(
        tiny_encoder, titled, top_k=1, reading=PaperReading(text_fields=["title"]), show_progress_bar=False
    )
    np.testing.assert_allclose(one.scores, listed.scores, atol=1e-6)
    papers, qrels = tmp_path / "papers.jsonl", tmp_path / "qrels.tsv"
    pd.DataFrame(titled).to_json(papers, orient="records", lines=True)
    qrels.write_text("p1\tp4\t1\np4\tp1\t1\n")
    result = evaluate(
        tiny_encoder,
        "retrieval",
        data=qrels,
        use_cache=False,
        reading=Reading(text_fields="title"),
        options=RetrievalOptions(papers=papers),
    )
    assert result.results[0].details["text_fields"] == ["title"]
    assert sciembed.encoders.WindowSettings(text_fields="title").text_fields == ("title",)
    assert sciembed.data.papers.paper_text(PAPERS[0], " ", "title") == PAPERS[0]["title"]
    with pytest.raises(TypeError, match=r"text_fields must be a field name or a list of them.*got set"):
        embed_to_file(
            tiny_encoder, papers, tmp_path / "o.jsonl", reading=PaperReading(text_fields={"title"}), use_cache=False
        )


def test_a_text_field_named_twice_is_refused_before_the_model_loads(tiny_bert, tmp_path, caplog):
    from sciembed.cli import main

    papers = tmp_path / "papers.jsonl"
    pd.DataFrame(PAPERS).to_json(papers, orient="records", lines=True)
    argv = [
        "embed",
        "--model",
        str(tmp_path / "no-model"),
        "--input",
        str(papers),
        "--output",
        str(tmp_path / "o.npy"),
    ]
    assert main([*argv, "--text-fields", "abstract", "title", "title"]) == 2
    assert "'title' more than once" in caplog.text and "no such model" not in caplog.text
    with pytest.raises(ValueError, match="'title' more than once"):
        sciembed.neighbours(tiny_bert, PAPERS, reading=PaperReading(text_fields=["title", "title"]))


def test_a_reading_option_given_on_its_own_names_the_argument_that_holds_it(tiny_encoder, tmp_path):
    moved = r"takes skip_invalid inside another argument: reading=sciembed.data.papers.PaperReading\(skip_invalid="
    with pytest.raises(TypeError, match=rf"embed_to_file\(\) {moved}"):
        embed_to_file(tiny_encoder, PAPERS, tmp_path / "o.jsonl", skip_invalid=True)
    with pytest.raises(TypeError, match=rf"neighbours\(\) {moved}"):
        sciembed.neighbours(tiny_encoder, PAPERS, skip_invalid=True)
    with pytest.raises(TypeError, match=r"takes rank inside another argument: share=sciembed.distributed.Share\("):
        embed_to_file(tiny_encoder, PAPERS, tmp_path / "o.jsonl", rank=0, world_size=2)
    assert list(tmp_path.iterdir()) == []
