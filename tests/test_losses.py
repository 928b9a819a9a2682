"""The training losses against hand computations on small tensors."""

from __future__ import annotations

import math

import pytest
import torch

from sciembed.training.losses import Multi2SPELoss, MultipleNegativesRankingLoss, RouterLoss, TripletMarginLoss


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


def test_mnr_uses_the_whole_similarity_matrix():
    a = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    b = torch.tensor([[1.0, 0.0], [1.0, 1.0], [0.0, 2.0]])
    loss = MultipleNegativesRankingLoss(temperature=0.5)
    scores = [[sum(x * y for x, y in zip(ai, bj)) / 0.5 for bj in b.tolist()] for ai in a.tolist()]
    rows = [-(scores[i][i] - math.log(sum(math.exp(s) for s in scores[i]))) for i in range(3)]
    assert loss(a, b).item() == pytest.approx(sum(rows) / 3, rel=1e-6)
    columns = [-(scores[i][i] - math.log(sum(math.exp(scores[j][i]) for j in range(3)))) for i in range(3)]
    symmetric = MultipleNegativesRankingLoss(temperature=0.5, symmetric=True)
    assert symmetric(a, b).item() == pytest.approx((sum(rows) + sum(columns)) / 6, rel=1e-6)
    # A diagonal-only loss would not change when an off-diagonal pair becomes more similar; this one does.
    closer = b.clone()
    closer[1] = torch.tensor([3.0, 0.0])  # b_1 now resembles a_0 more than b_0 does
    assert loss(a, closer).item() > loss(a, b).item()


def test_mnr_temperature_is_learned():
    loss = MultipleNegativesRankingLoss()
    assert loss.temperature.item() == pytest.approx(0.7) and loss.temperature.requires_grad
    a, b = torch.randn(4, 3), torch.randn(4, 3)
    loss(a, b).backward()
    assert loss.temperature.grad is not None and loss.temperature.grad.item() != 0
    assert not MultipleNegativesRankingLoss(learn_temperature=False).temperature.requires_grad


def test_router_losses_by_hand():
    from sciembed.training.losses import RouterLoss, load_balancing_loss, mutual_information_loss, router_cross_entropy

    logits = torch.tensor([[2.0, 0.0], [0.0, 1.0], [1.0, 1.0], [0.0, 3.0]])
    domains = torch.tensor([0, 1, 0, 1])
    probabilities = logits.softmax(-1).tolist()
    ce = -sum(math.log(probabilities[i][d]) for i, d in enumerate(domains.tolist())) / 4
    assert router_cross_entropy(logits, domains).item() == pytest.approx(ce, rel=1e-6)

    # MI: P(t) = 1/2 each; P(e|t) = mean probabilities of the task's rows.
    p_e_t = [[(probabilities[i][e] + probabilities[j][e]) / 2 for e in range(2)] for i, j in ((0, 2), (1, 3))]
    joint = [[0.5 * p_e_t[t][e] for e in range(2)] for t in range(2)]
    p_e = [joint[0][e] + joint[1][e] for e in range(2)]
    mi = sum(joint[t][e] * math.log(joint[t][e] / (0.5 * p_e[e])) for t in range(2) for e in range(2))
    assert mutual_information_loss(logits, domains).item() == pytest.approx(-mi, rel=1e-6)

    # Top-1 choices: experts 0, 1, 0 (tie: first), 1 -> f = (1/2, 1/2).
    mean_p = [sum(p[e] for p in probabilities) / 4 for e in range(2)]
    assert load_balancing_loss(logits).item() == pytest.approx(2 * (0.5 * mean_p[0] + 0.5 * mean_p[1]), rel=1e-6)
    # Uniform routing balances perfectly: the loss is 1.
    assert load_balancing_loss(torch.zeros(6, 3), top_k=2).item() == pytest.approx(1.0)

    # Token-level logits: padding is left out, each token carries its paper's domain.
    tokens = torch.stack([logits[:2], logits[2:]])  # (2 papers, 2 tokens, 2 experts)
    mask = torch.tensor([[1, 1], [1, 0]])
    expected = router_cross_entropy(logits[:3], torch.tensor([0, 0, 1]))
    assert router_cross_entropy(tokens, torch.tensor([0, 1]), mask).item() == pytest.approx(expected.item(), rel=1e-6)

    two_layers = RouterLoss(1.0, 0.5, 0.1)([logits, None, logits], domains)
    one = router_cross_entropy(logits, domains) + 0.5 * mutual_information_loss(logits, domains) + 0.1 * load_balancing_loss(logits)
    assert two_layers.item() == pytest.approx(one.item(), rel=1e-6)
    with pytest.raises(ValueError, match="need domain_ids"):
        RouterLoss()([logits])
    with pytest.raises(ValueError, match="enforced routing"):
        RouterLoss()([None], domains)


def test_router_loss_trains_a_sentence_routed_moe_bert(tiny_bert):
    from transformers import AutoTokenizer

    from sciembed.families import from_bert

    model, _ = from_bert("moe_bert", str(tiny_bert), routing="sentence", domains=["cs", "bio"], top_k=1)
    tokenizer = AutoTokenizer.from_pretrained(tiny_bert)
    batch = tokenizer(["garbage collection of list structure", "neural network learning"], padding=True, return_tensors="pt")
    domains = torch.tensor([0, 1])
    loss = RouterLoss(1.0, 0.1, 0.01)(model(**batch).router_logits, domains)
    loss.backward()
    routers = [p for name, p in model.named_parameters() if "router" in name]
    assert routers and all(p.grad is not None and p.grad.abs().sum() > 0 for p in routers)


def test_multitask_loss_sums_each_task_loss_by_hand():
    from torch.nn import functional as F

    from sciembed.training.losses import MultiTaskLoss, TaskSpec

    torch.manual_seed(0)
    loss = MultiTaskLoss({"fos": TaskSpec("multilabel", 3), "mag": TaskSpec("classification", 4),
                          "year": TaskSpec("regression"), "cite": TaskSpec("proximity")}, hidden_size=5, dropout=0.0)
    x = torch.randn(4, 5)
    fos, mag, year = torch.tensor([[1, 0, 1]] * 4), torch.tensor([0, 1, 2, 3]), torch.tensor([1.0, 2.0, 3.0, 4.0])
    q, p, n = torch.randn(4, 5), torch.randn(4, 5), torch.randn(4, 5)

    def linear(name):
        head = loss.heads[name][1]
        return x @ head.weight.T + head.bias

    expected = (F.binary_cross_entropy_with_logits(linear("fos"), fos.float()) + F.cross_entropy(linear("mag"), mag)
                + ((linear("year").squeeze(-1) - year) ** 2).mean() + TripletMarginLoss()(q, p, n))
    total = loss({"fos": (x, fos), "mag": (x, mag), "year": (x, year), "cite": (q, p, n)})
    assert total.item() == pytest.approx(expected.item(), rel=1e-6)
    assert "cite" not in loss.heads
    with pytest.raises(ValueError, match="unknown task 'mesh'"):
        loss({"mesh": (x, mag)})
    with pytest.raises(ValueError, match="num_labels >= 2"):
        TaskSpec("classification")
