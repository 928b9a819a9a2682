"""SciDocs recommendation task: click-log reader, metrics by hand, features by hand, and the trained ranker."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch

from sciembed import InvalidPaperError
from sciembed.data.scidocs_recomm import Click, SciDocsRecomm, read_click_file, read_scidocs_recomm
from sciembed.evaluation.recommendation import (
    FEATURE_NAMES,
    RecommendationTask,
    click_metrics,
    click_ndcg,
    evaluate_recommendations,
    pair_features,
    ranked_above,
)

HEADER = "query_paper,clicked_paper,other_papers"


def _release(folder, *, train=None, test=None, scores=(4, 2, 1, 1)):
    folder.mkdir()
    (folder / "recomm").mkdir()
    papers = {
        pid: {"paper_id": pid, "title": f"Title {pid}", "abstract": "An abstract."}
        for pid in ("q1", "q2", "a", "b", "c", "d")
    }
    (folder / "paper_metadata_recomm.json").write_text(json.dumps(papers))
    (folder / "recomm" / "propensity_scores.json").write_text(json.dumps({"scores": list(scores)}))
    rows = {
        "train": train or ['q1,b,"a,b,c"', 'q2,a,"a"'],
        "val": ['q1,c,"a,b,c,d"'],
        "test": test or ['q2,d,"c, d"', "", 'q1,a,"b,a"'],
    }
    for split, lines in rows.items():
        (folder / "recomm" / f"{split}.csv").write_text("\n".join([HEADER, *lines]) + "\n")
    return folder


# --- reader -------------------------------------------------------------------------------------


def test_reader_parses_clicks_positions_and_propensities(tmp_path):
    data = read_scidocs_recomm(_release(tmp_path / "scidocs"))
    assert data.missing == [] and set(data.papers) == {"q1", "q2", "a", "b", "c", "d"}
    assert data.clicks["train"] == [Click("q1", "b", ("a", "b", "c"), 2), Click("q2", "a", ("a",), 3)]
    assert [c.clicked_position for c in data.clicks["train"]] == [2, 1]
    # Blank line skipped; ids stripped; line numbers are physical lines.
    assert data.clicks["test"] == [Click("q2", "d", ("c", "d"), 2), Click("q1", "a", ("b", "a"), 4)]
    assert data.propensity_scores.tolist() == [4, 2, 1, 1]
    assert dict(data.stats["test"]) == {"rows": 2, "unknown_papers": 0}
    tables = data.to_datasets()
    assert tables["val"].to_dict() == {
        "query_id": ["q1"],
        "clicked_id": ["c"],
        "shown_ids": [["a", "b", "c", "d"]],
        "clicked_position": [3],
        "line": [2],
    }


def test_reader_lists_missing_files_and_needs_a_click_log(tmp_path):
    folder = _release(tmp_path / "scidocs")
    (folder / "recomm" / "val.csv").unlink()
    (folder / "recomm" / "propensity_scores.json").unlink()
    data = read_scidocs_recomm(folder)
    assert data.missing == ["recomm/propensity_scores.json", "recomm/val.csv"] and data.propensity_scores is None
    for split in ("train", "test"):
        (folder / "recomm" / f"{split}.csv").unlink()
    with pytest.raises(FileNotFoundError, match="none of the click logs"):
        read_scidocs_recomm(folder)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('q1,a,"a,b",extra', r"line 3: a click line is 'query_id,clicked_id,\"shown ids\"' \(3 fields\), got 4"),
        ("q1,a", r"line 3: .*\(3 fields\), got 2"),
        (',a,"a,b"', r"line 3: empty query_id"),
        ('q1,a,"a,,b"', r"line 3: empty paper id at position 2 of the shown list"),
        ('q1,d,"a,b"', r"line 3: clicked paper 'd' is not among the 2 shown paper\(s\)"),
    ],
)
def test_malformed_click_lines_name_file_and_line(tmp_path, line, message):
    folder = _release(tmp_path / "scidocs", train=['q1,b,"a,b,c"', line])
    with pytest.raises(ValueError, match=r"recomm/train\.csv, " + message):
        read_scidocs_recomm(folder)


def test_first_line_must_be_a_header(tmp_path):
    path = tmp_path / "test.csv"
    path.write_text('q1,a,"a,b"\nq2,b,"a,b"\n')
    with pytest.raises(ValueError, match=r"test\.csv, line 1: expected a header line .* got a click"):
        read_click_file(path)


def test_positions_past_the_propensities_and_bad_propensity_files_fail(tmp_path):
    folder = _release(tmp_path / "scidocs", scores=(3, 2))
    message = (
        r"recomm/val\.csv, line 2: click at position 3, but propensity_scores\.json has propensities for 2 position"
    )
    with pytest.raises(ValueError, match=message):
        read_scidocs_recomm(folder)
    (folder / "recomm" / "propensity_scores.json").write_text(json.dumps({"scores": [1, 0]}))
    with pytest.raises(ValueError, match=r"the propensity of position 2 must be a positive number, got 0"):
        read_scidocs_recomm(folder)
    (folder / "recomm" / "propensity_scores.json").write_text("[1, 2]")
    with pytest.raises(ValueError, match=r'expected \{"scores"'):
        read_scidocs_recomm(folder)


def test_rows_naming_unknown_papers_fail_or_are_dropped_and_counted(tmp_path):
    folder = _release(tmp_path / "scidocs", test=['q2,d,"c,d"', 'q1,a,"ghost,a"', 'q9,a,"a"'])
    with pytest.raises(InvalidPaperError, match="2 invalid") as error:
        read_scidocs_recomm(folder)
    assert "recomm/test.csv, line 3 (paper_id 'ghost'): shown_ids not in paper_metadata_recomm.json" in str(
        error.value
    )
    assert "recomm/test.csv, line 4 (paper_id 'q9'): query_id not in" in str(error.value)
    data = read_scidocs_recomm(folder, skip_invalid=True)
    assert [c.line for c in data.clicks["test"]] == [2]
    assert dict(data.stats["test"]) == {"rows": 3, "unknown_papers": 2} and len(data.skipped) == 2
    # An explicit known-id set (e.g. the papers with vectors) replaces the metadata's ids.
    data = read_scidocs_recomm(folder, known_ids={"q1", "q2", "a", "b", "c", "d", "ghost", "q9"})
    assert len(data.clicks["test"]) == 3


# --- metrics ------------------------------------------------------------------------------------


def test_ranked_above_counts_ties_as_half():
    assert ranked_above(0.5, [0.7, 0.5, 0.2]) == 1.5
    assert ranked_above(0.5, []) == 0.0
    assert click_ndcg(1.5) == pytest.approx(1 / math.log2(3.5))


def test_click_metrics_by_hand():
    # Propensities 4,2,1,1 normalise to 2,1,0.5,0.5 (mean 1): weights 1/2, 1, 2, 2 for positions 1..4.
    clicked = [0.9, 0.3, 0.4, 0.1]
    others = [[0.1, 0.2], [0.3], [], [0.5, 0.6, 0.2]]  # above: 0, 0.5 (tie), 0 (lone candidate), 3
    result = click_metrics(clicked, others, [1, 2, 3, 4], [4, 2, 1, 1])
    ndcg = [1.0, 1 / math.log2(2.5), 1.0, 1 / math.log2(5)]
    weights = [0.5, 1.0, 2.0, 2.0]
    assert result["ndcg"] == pytest.approx(100 * sum(w * n for w, n in zip(weights, ndcg)) / 5.5)
    assert result["P@1"] == pytest.approx(100 * (0.5 + 2.0) / 5.5)  # the tie at the top does not count
    assert result["ndcg_unadjusted"] == pytest.approx(100 * sum(ndcg) / 4)
    assert result["P@1_unadjusted"] == pytest.approx(50.0)
    assert result["num_clicks"] == 4
    with pytest.raises(ValueError, match=r"click 3: position 5 is outside the 4 propensity position\(s\)"):
        click_metrics(clicked, others, [1, 2, 3, 5], [4, 2, 1, 1])
    with pytest.raises(ValueError, match="no clicks"):
        click_metrics([], [], [], [1])


# --- features -----------------------------------------------------------------------------------


def test_pair_features_by_hand():
    papers = {
        "q": {
            "authors": ["A", "B"],
            "references": ["r1", "r2", "c", "u"],
            "cited_by": ["x1", "x2"],
            "year": 2015,
            "title": "Graph neural networks",
        },
        "c": {
            "authors": ["B", "C", "D"],
            "references": ["r2", "r3", "q"],
            "cited_by": ["x2", "x3", "x4", "x2"],
            "year": "2005",
            "title": "Neural networks for graph data",
        },
        "old": {"year": 1900, "title": None},
    }
    vectors = {
        "q": np.array([1.0, 0.0, 0.0]),
        "c": np.array([1.0, 1.0, 0.0]),
        "u": np.array([0.0, 0.0, 2.0]),
        "old": np.array([0.0, 3.0, 0.0]),
    }
    rows = pair_features([("q", "c"), ("c", "q"), ("q", "u"), ("u", "old")], vectors, papers)
    assert rows.dtype == np.float32 and rows.shape == (4, len(FEATURE_NAMES))
    got = [dict(zip(FEATURE_NAMES, row.tolist())) for row in rows]
    expected_qc = {
        "author_match": 1 / 4,
        "position": 0.0,
        "title_match": 1 / 7,
        "embedding_cosine": 1 / math.sqrt(2),
        "citation_overlap": 1 / 4,
        "reference_overlap": 1 / 6,
        "candidate_cites_query": 1.0,
        "query_cites_candidate": 1.0,
        "oldness": 0.75,
        "relative_oldness": 0.5,
        "number_citations": math.log(4) / 10,
    }
    assert got[0] == pytest.approx(expected_qc, abs=1e-6)
    assert got[1]["oldness"] == pytest.approx(0.25) and got[1]["relative_oldness"] == pytest.approx(-0.5)
    assert got[1]["number_citations"] == pytest.approx(math.log(3) / 10)
    # "u" has a vector but no metadata: only the query's own references can say q cites u.
    assert got[2] == pytest.approx({**dict.fromkeys(FEATURE_NAMES, 0.0), "query_cites_candidate": 1.0})
    # Oldness is clipped to 1; the query without metadata zeroes the pairwise features.
    assert got[3] == pytest.approx({**dict.fromkeys(FEATURE_NAMES, 0.0), "oldness": 1.0})
    with pytest.raises(ValueError, match=r"1 paper\(s\) named by the clicks have no vector, e.g. \['nope'\]"):
        pair_features([("q", "nope")], vectors, papers)
    with pytest.raises(ValueError, match=r"paper 'c': authors must be a list of ids or names, got 'B, C'"):
        pair_features([("q", "c")], vectors, {**papers, "c": {"authors": "B, C"}})
    with pytest.raises(ValueError, match=r"the vector of paper 'u' is not finite"):
        pair_features([("q", "u")], {**vectors, "u": np.array([0.0, np.nan, 1.0])}, papers)


# --- the trained ranker ---------------------------------------------------------------------------


def _synthetic(seed, counts=(600, 150, 300), shown=8, direction=1.0, by_author=False):
    """Clicks drawn by softmax(8 * direction * cosine) over the shown papers (or by shared authors)."""
    rng = np.random.default_rng(seed)
    n = 400
    vectors = {f"p{i}": rng.normal(size=16).astype(np.float32) for i in range(n)}
    unit = {k: v / np.linalg.norm(v) for k, v in vectors.items()}
    papers = {}
    if by_author:
        papers = {f"p{i}": {"paper_id": f"p{i}", "authors": [f"author{i % 40}"]} for i in range(n)}
    clicks = {}
    for split, count in zip(("train", "val", "test"), counts):
        rows = []
        for line in range(2, count + 2):
            query, *shown_ids = [f"p{i}" for i in rng.choice(n, shown + 1, replace=False)]
            if by_author:
                # One shown paper shares the query's author and is clicked; embeddings carry no signal.
                shown_ids[rng.integers(shown)] = f"p{(int(query[1:]) + 40 * rng.integers(1, 9)) % n}"
                clicked = next(p for p in shown_ids if papers[p]["authors"] == papers[query]["authors"])
            else:
                similarity = np.array([unit[query] @ unit[p] for p in shown_ids])
                weights = np.exp(8 * direction * similarity)
                clicked = shown_ids[rng.choice(shown, p=weights / weights.sum())]
            rows.append(Click(query, clicked, tuple(shown_ids), line))
        clicks[split] = rows
    propensities = np.array([1 / k for k in range(1, shown + 1)])
    return SciDocsRecomm("synthetic", clicks, propensities, papers), vectors


def _random_order_ndcg(shown=8):
    # Expected nDCG when the clicked paper lands uniformly at any of the shown ranks.
    return 100 * np.mean([click_ndcg(k) for k in range(shown)])


@pytest.mark.parametrize("direction", [1.0, -1.0], ids=["clicks-near-query", "clicks-far-from-query"])
def test_trained_ranker_beats_random_order_whichever_way_clicks_lean(direction):
    data, vectors = _synthetic(0, direction=direction)
    result = evaluate_recommendations(data, vectors)
    # Random order gives 49.4; learning the sign of the cosine gives ~79 either way. An untrained or
    # sign-blind ranker could not pass both cases.
    assert result["ndcg"] > _random_order_ndcg() + 20
    assert result["P@1"] > 100 / 8 + 25
    assert (result["num_clicks"], result["num_candidates"], result["num_train_pairs"], result["num_val_pairs"]) == (
        300,
        2400,
        4200,
        1050,
    )
    assert result["epochs_run"] == 5 and 1 <= result["best_epoch"] <= 5 and result["best_val_loss"] > 0


def test_metadata_features_reach_the_ranker():
    data, vectors = _synthetic(1, counts=(300, 80, 150), by_author=True)
    result = evaluate_recommendations(data, vectors)
    assert result["ndcg"] > _random_order_ndcg() + 25


def test_evaluation_is_deterministic_for_a_seed_and_leaves_global_state_alone():
    data, vectors = _synthetic(2, counts=(200, 60, 100))
    threads = torch.get_num_threads()
    torch.manual_seed(123)
    expected_draw = torch.rand(3)
    torch.manual_seed(123)
    first = evaluate_recommendations(data, vectors, seed=5)
    assert torch.equal(torch.rand(3), expected_draw) and torch.get_num_threads() == threads
    assert evaluate_recommendations(data, vectors, seed=5) == first
    assert evaluate_recommendations(data, vectors, seed=6)["best_val_loss"] != first["best_val_loss"]


def test_early_stopping_and_input_errors():
    data, vectors = _synthetic(3, counts=(100, 40, 40))
    # Training stops once the validation loss has not improved for `patience` epochs.
    stopped = evaluate_recommendations(data, vectors, epochs=40, patience=2)
    assert stopped["epochs_run"] == stopped["best_epoch"] + 2 < 40
    # split="val" mirrors SciDocs' val_or_test='val': no validation set, every epoch run, the last kept.
    tuning = evaluate_recommendations(data, vectors, split="val", epochs=3)
    assert (tuning["num_clicks"], tuning["epochs_run"], tuning["best_epoch"], tuning["num_val_pairs"]) == (40, 3, 3, 0)
    assert math.isnan(tuning["best_val_loss"])
    with pytest.raises(ValueError, match="split must be 'test' or 'val'"):
        evaluate_recommendations(data, vectors, split="train")
    without = SciDocsRecomm("x", data.clicks, None)
    with pytest.raises(ValueError, match="propensity_scores.json is missing"):
        evaluate_recommendations(without, vectors)
    no_val = SciDocsRecomm("x", {"train": data.clicks["train"], "test": data.clicks["test"]}, data.propensity_scores)
    with pytest.raises(ValueError, match="needs 'val' clicks"):
        evaluate_recommendations(no_val, vectors)
    del vectors["p0"], vectors["p1"]
    with pytest.raises(ValueError, match=r"paper\(s\) named by the clicks have no vector"):
        evaluate_recommendations(data, vectors)


def test_recommendation_task_for_the_runner(tmp_path):
    folder = _release(tmp_path / "scidocs", test=['q2,d,"c,d"', 'q1,a,"ghost,a"'])
    with pytest.raises(InvalidPaperError):
        RecommendationTask.from_folder("scidocs", "Recomm", folder, task_id="recomm")
    task = RecommendationTask.from_folder("scidocs", "Recomm", folder, skip_invalid=True, seed=3, task_id="recomm")
    assert sorted(task.documents) == ["a", "b", "c", "d", "q1", "q2"] and task.documents["a"]["title"] == "Title a"
    vectors = {paper: np.eye(6, dtype=np.float32)[i] for i, paper in enumerate(sorted(task.documents))}
    result = task.evaluate(vectors, {})
    assert (result.kind, result.task, result.task_id) == ("recommendation", "Recomm", "recomm")
    assert set(result.metrics) == {"ndcg", "P@1"} and 0 <= result.metrics["P@1"] <= 100
    assert result.counts["num_clicks"] == 1 and result.counts["num_train_pairs"] == 2
    assert result.skipped == {"clicks_naming_unknown_papers": 1} and result.details["seed"] == 3
    (folder / "recomm" / "propensity_scores.json").unlink()
    with pytest.raises(ValueError, match=r"the recommendation task needs recomm/propensity_scores\.json"):
        RecommendationTask.from_folder("scidocs", "Recomm", folder, skip_invalid=True)
