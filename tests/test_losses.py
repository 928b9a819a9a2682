"""The training losses against hand computations on small tensors."""

from __future__ import annotations

import math

import pytest
import torch

from sciembed.training.losses import (
    Multi2SPELoss,
    MultipleNegativesRankingLoss,
    MultiTaskLoss,
    RelationalAnchorLoss,
    TaskSpec,
    TripletMarginLoss,
)


def test_triplet_margin_loss_by_hand():
    query = torch.tensor([[0.0, 0.0], [1.0, 1.0]])
    positive = torch.tensor([[3.0, 4.0], [1.0, 1.0]])  # distances 5 and 0
    negative = torch.tensor([[0.0, 1.0], [4.0, 5.0]])  # distances 1 and 5
    # Row 1: max(5 - 1 + 1, 0) = 5; row 2: max(0 - 5 + 1, 0) = 0.
    assert TripletMarginLoss()(query, positive, negative).item() == pytest.approx(2.5)
    assert TripletMarginLoss(margin=5)(query, positive, negative).item() == pytest.approx((9 + 0) / 2)
    with pytest.raises(ValueError, match="one \\(batch, dim\\) shape"):
        TripletMarginLoss()(query, positive, negative[:1])


def _similarity(a, b, weight):
    # eq. 3 written out element by element.
    best = max(sum(x * y for x, y in zip(ci, cj)) for ci in a for cj in b)
    sum_a = [sum(c[d] for c in a) for d in range(len(a[0]))]
    sum_b = [sum(c[d] for c in b) for d in range(len(b[0]))]
    return weight * best + (1 - weight) * sum(x * y for x, y in zip(sum_a, sum_b))


@pytest.mark.parametrize("weight", [0.0, 0.1, 1.0])
def test_multi2spe_loss_by_hand_with_three_facets(weight):
    torch.manual_seed(0)
    query, positive, negative = (torch.randn(2, 3, 4) for _ in range(3))
    loss = Multi2SPELoss(weight)
    expected = 0.0
    for q, p, n in zip(query.tolist(), positive.tolist(), negative.tolist()):
        s_pos, s_neg = _similarity(q, p, weight), _similarity(q, n, weight)
        expected += -(s_pos - math.log(math.exp(s_pos) + math.exp(s_neg)))
        assert loss.similarity(torch.tensor([q]), torch.tensor([p])).item() == pytest.approx(s_pos, rel=1e-5)
    assert loss(query, positive, negative).item() == pytest.approx(expected / 2, rel=1e-5)


def test_multi2spe_released_mode_mixes_two_cross_entropies():
    torch.manual_seed(1)
    query, positive, negative = (torch.randn(3, 2, 5) for _ in range(3))
    released = Multi2SPELoss(0.1, mode="released")(query, positive, negative)
    summed = Multi2SPELoss(0.0)(query, positive, negative)  # λ = 0: summed similarity only
    best = Multi2SPELoss(1.0)(query, positive, negative)  # λ = 1: best facet pair only
    assert released.item() == pytest.approx(0.9 * summed.item() + 0.1 * best.item(), rel=1e-6)
    assert released.item() != pytest.approx(Multi2SPELoss(0.1)(query, positive, negative).item(), rel=1e-3)
    with pytest.raises(ValueError, match="mode"):
        Multi2SPELoss(mode="mixed")


def test_multi2spe_in_batch_cosine_loss_by_hand():
    """in_batch_negatives with cosine similarity: each query's positive is picked among every positive and negative
    of the batch, eq. 3 taken between unit vectors (facets and sums), at temperature τ."""
    torch.manual_seed(2)
    query, positive, negative = (torch.randn(3, 2, 4) for _ in range(3))
    loss = Multi2SPELoss(0.1, similarity="cosine", temperature=0.05, in_batch_negatives=True)

    def unit(vectors):
        return [[x / math.sqrt(sum(y * y for y in v)) for x in v] for v in vectors]

    def cosine_similarity(a, b):
        best = max(sum(x * y for x, y in zip(ci, cj)) for ci in unit(a) for cj in unit(b))
        sum_a, sum_b = unit([[sum(c[d] for c in a) for d in range(4)], [sum(c[d] for c in b) for d in range(4)]])
        return 0.1 * best + 0.9 * sum(x * y for x, y in zip(sum_a, sum_b))

    candidates = positive.tolist() + negative.tolist()
    expected = 0.0
    for i, q in enumerate(query.tolist()):
        logits = [cosine_similarity(q, c) / 0.05 for c in candidates]
        expected += -(logits[i] - math.log(sum(math.exp(x) for x in logits)))
    assert loss(query, positive, negative).item() == pytest.approx(expected / 3, rel=1e-5)


def test_multi2spe_loss_with_one_facet_is_the_multiple_negatives_ranking_loss():
    torch.manual_seed(3)
    query, positive, negative = (torch.randn(4, 1, 6) for _ in range(3))
    facets = Multi2SPELoss(0.1, similarity="cosine", temperature=0.05, in_batch_negatives=True)(
        query, positive, negative
    )
    mnr = MultipleNegativesRankingLoss(temperature=0.05, similarity="cosine")(
        query[:, 0], positive[:, 0], negative[:, 0]
    )
    assert facets.item() == pytest.approx(mnr.item(), rel=1e-5)
    with pytest.raises(ValueError, match="similarity"):
        Multi2SPELoss(similarity="l2")


def test_mnr_uses_the_whole_similarity_matrix():
    a = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    b = torch.tensor([[1.0, 0.0], [1.0, 1.0], [0.0, 2.0]])
    loss = MultipleNegativesRankingLoss(temperature=0.5, similarity="dot")
    scores = [[sum(x * y for x, y in zip(ai, bj)) / 0.5 for bj in b.tolist()] for ai in a.tolist()]
    rows = [-(scores[i][i] - math.log(sum(math.exp(s) for s in scores[i]))) for i in range(3)]
    assert loss(a, b).item() == pytest.approx(sum(rows) / 3, rel=1e-6)
    columns = [-(scores[i][i] - math.log(sum(math.exp(scores[j][i]) for j in range(3)))) for i in range(3)]
    symmetric = MultipleNegativesRankingLoss(temperature=0.5, similarity="dot", symmetric=True)
    assert symmetric(a, b).item() == pytest.approx((sum(rows) + sum(columns)) / 6, rel=1e-6)
    # A diagonal-only loss would not change when an off-diagonal pair becomes more similar; this one does.
    closer = b.clone()
    closer[1] = torch.tensor([3.0, 0.0])  # b_1 now resembles a_0 more than b_0 does
    assert loss(a, closer).item() > loss(a, b).item()


def test_mnr_temperature_is_learned():
    loss = MultipleNegativesRankingLoss(temperature=0.7, learn_temperature=True)
    assert loss.temperature.item() == pytest.approx(0.7) and loss.temperature.requires_grad
    a, b = torch.randn(4, 3), torch.randn(4, 3)
    loss(a, b).backward()
    assert loss.temperature.grad is not None and loss.temperature.grad.item() != 0
    assert not MultipleNegativesRankingLoss().temperature.requires_grad


def _cosine(x, y):
    return sum(a * b for a, b in zip(x, y)) / math.sqrt(sum(a * a for a in x) * sum(b * b for b in y))


def test_cosine_triplet_margin_loss_by_hand():
    query = torch.tensor([[1.0, 0.0], [0.0, 2.0]])
    positive = torch.tensor([[1.0, 1.0], [0.0, 5.0]])  # cosine distances 1 - 1/sqrt(2) and 0
    negative = torch.tensor([[0.0, 3.0], [1.0, 0.0]])  # cosine distances 1 and 1
    loss = TripletMarginLoss(margin=0.25, distance="cosine")
    expected = (max(1 - 1 / math.sqrt(2) - 1 + 0.25, 0) + max(0 - 1 + 0.25, 0)) / 2
    assert loss(query, positive, negative).item() == pytest.approx(expected, rel=1e-6)
    # Scaling a vector changes L2 distances but not cosine ones.
    assert loss(query * 3, positive, negative).item() == pytest.approx(expected, rel=1e-6)
    assert TripletMarginLoss()(query * 3, positive, negative).item() != pytest.approx(
        TripletMarginLoss()(query, positive, negative).item()
    )
    with pytest.raises(ValueError, match="distance"):
        TripletMarginLoss(distance="manhattan")


def _ranking_by_hand(anchor, positive, negative, temperature: float) -> float:
    """Mean over anchors of -log softmax of the own positive among all positives and negatives (cosine / τ)."""
    candidates = positive.tolist() + negative.tolist()
    total = 0.0
    for i, a in enumerate(anchor.tolist()):
        scores = [_cosine(a, c) / temperature for c in candidates]
        total += -(scores[i] - math.log(sum(math.exp(s) for s in scores)))
    return total / len(anchor)


def test_mnr_with_hard_negatives_by_hand():
    """Each anchor against every positive and every hard negative of the batch, cosine similarity / τ."""
    torch.manual_seed(2)
    anchor, positive, negative = (torch.randn(3, 4) for _ in range(3))
    loss = MultipleNegativesRankingLoss(temperature=0.05)
    expected = _ranking_by_hand(anchor, positive, negative, 0.05)
    assert loss(anchor, positive, negative).item() == pytest.approx(expected, rel=1e-5)
    # The hard negatives are columns: without them the loss is the in-batch one alone, and smaller.
    assert loss(anchor, positive).item() < loss(anchor, positive, negative).item()
    with pytest.raises(ValueError, match="symmetric"):
        MultipleNegativesRankingLoss(symmetric=True)(anchor, positive, negative)


def test_multitask_proximity_loss_is_the_triplet_margin_or_the_ranking_loss_by_hand():
    """SciRepEval's multi-task loss scores proximity tasks with the paper's triplet margin, or with multiple-negatives
    ranking between cosines (``proximity="mnr"``, for unit-vector bases); classification heads are unchanged."""
    torch.manual_seed(3)
    anchor, positive, negative = (torch.randn(4, 6) for _ in range(3))
    tasks = {"cite": TaskSpec("proximity"), "fields": TaskSpec("classification", 3)}
    paper = MultiTaskLoss(tasks, hidden_size=6, margin=1.0)
    ranking = MultiTaskLoss(tasks, hidden_size=6, proximity="mnr", temperature=0.05)
    triplets = (anchor, positive, negative)
    assert paper.task_loss("cite", triplets).item() == pytest.approx(TripletMarginLoss(1.0)(*triplets).item())
    expected = _ranking_by_hand(anchor, positive, negative, 0.05)
    assert ranking.task_loss("cite", triplets).item() == pytest.approx(expected, rel=1e-5)
    ranking.heads.load_state_dict(paper.heads.state_dict())
    ranking.eval()
    paper.eval()
    labelled = (torch.randn(4, 6), torch.tensor([0, 2, 1, 0]))
    assert ranking.task_loss("fields", labelled).item() == pytest.approx(paper.task_loss("fields", labelled).item())
    with pytest.raises(ValueError, match="unknown proximity loss 'l2'"):
        MultiTaskLoss(tasks, hidden_size=6, proximity="l2")


def test_relational_anchor_loss_by_hand_and_blind_to_a_rotation():
    """The mean over i != j of the squared change of cos(e_i, e_j), times the weight; a rotation or a rescaling of
    the whole batch keeps every relation, so costs nothing."""
    torch.manual_seed(0)
    targets, embeddings = torch.randn(5, 8), torch.randn(5, 8)
    unit_t, unit_e = torch.nn.functional.normalize(targets, dim=-1), torch.nn.functional.normalize(embeddings, dim=-1)
    by_hand = (
        sum(
            (float(unit_e[i] @ unit_e[j]) - float(unit_t[i] @ unit_t[j])) ** 2
            for i in range(5)
            for j in range(5)
            if i != j
        )
        / 20
    )
    assert RelationalAnchorLoss(3.0)(embeddings, targets).item() == pytest.approx(3 * by_hand, rel=1e-5)
    rotation, _ = torch.linalg.qr(torch.randn(8, 8))
    assert RelationalAnchorLoss(3.0)(2.5 * targets @ rotation, targets).item() == pytest.approx(0.0, abs=1e-6)
    with pytest.raises(ValueError, match="weight must be positive"):
        RelationalAnchorLoss(0.0)
    with pytest.raises(ValueError, match="two or more papers"):
        RelationalAnchorLoss()(embeddings[:1], targets[:1])
