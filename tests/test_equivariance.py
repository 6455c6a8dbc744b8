"""The equivariance analysis against references written here: the seed's snippet line by line,
permutation matrices instead of index shuffles, and claims that must fail on broken input."""

import math
from pathlib import Path

import pytest
import torch
import yaml

from posenc.analyses.equivariance import compute as eq
from posenc.analyses.equivariance.spec import SPEC
from posenc.analysis import Context
from posenc.claims import evaluate
from posenc.encodings import PLACES, REGISTRY

CPU = torch.device("cpu")
# FIRE is relative below its threshold L: the shifts below must carry queries past it, or it
# would look relative (the study's config sets L from its L_train the same way).
ENCODING_CFG = {
    "t5_bias": {"num_buckets": 8, "max_distance": 16},
    "fire": {"threshold": 8.0},
    # Heads of 4 here: partial RoPE's default quarter would rotate one dimension (refused),
    # and p-RoPE's would turn int(0.25 x 4 // 2) = 0 pairs (refused by its config check).
    "rope_partial": {"fraction": 0.5},
    "rope_proportional": {"proportion": 0.5},
}
ALL = list(REGISTRY)
IDS = {c.id for c in SPEC.claims}


class _Log:
    def info(self, *args):
        pass


def run(cfg, encodings):
    """The analysis as the workflow runs it: compute, then the spec's claims."""
    ctx = Context(cfg, 0, list(encodings), ENCODING_CFG, CPU, log=_Log())
    m = eq.compute(ctx)
    return m, evaluate(SPEC.claims, m.evidence, cfg, "equivariance")


def tiny_cfg(**overrides):
    cfg = {
        "d_model": 8,
        "n_heads": 2,
        "n_layers": 2,
        "seq_len": 5,
        "batch": 1,
        "n_seeds": 1,
        "n_perms": 2,
        "dtypes": ["float32", "float64"],
        "shifts": [3, 40],
        "learned_init_std": 0.5,
        "thresholds": {
            "seed_atol_equal": 1e-6,
            "seed_atol_broken": 1e-4,
            "equal_ulps": 64,
            "broken_min": 1e-4,
        },
    }
    return {**cfg, **overrides}


def test_seed_check_matches_the_snippet_line_by_line():
    """The seed's own code, with its own exp/log sinusoid, gives the same booleans and numbers."""
    torch.manual_seed(0)
    attn = torch.nn.MultiheadAttention(16, 2, batch_first=True)
    x = torch.randn(1, 5, 16)
    perm = torch.tensor([3, 0, 4, 1, 2])
    out, _ = attn(x, x, x)
    out_p, _ = attn(x[:, perm], x[:, perm], x[:, perm])
    pos = torch.arange(100).unsqueeze(1)
    div = torch.exp(torch.arange(0, 64, 2) * (-math.log(10000.0) / 64))
    pe = torch.zeros(100, 64)
    pe[:, 0::2], pe[:, 1::2] = torch.sin(pos * div), torch.cos(pos * div)
    xp = x + pe[:5, :16]
    out2, _ = attn(xp, xp, xp)
    xpp = x[:, perm] + pe[:5, :16]
    out2_p, _ = attn(xpp, xpp, xpp)

    got = eq.seed_check(CPU, 1e-6, 1e-4)
    assert got["no_pe_allclose"] is True and got["pe_allclose"] is False
    assert got["no_pe_max_abs"] == pytest.approx(
        (out[:, perm] - out_p).abs().max().item(), abs=1e-7
    )
    assert got["pe_max_abs"] == pytest.approx((out2[:, perm] - out2_p).abs().max().item(), abs=1e-5)


# The first registered encoding of each place of action.
ONE_PER_PLACE = [next(e for e in ALL if REGISTRY[e].acts_on == place) for place in PLACES]


@pytest.mark.parametrize("encoding", ONE_PER_PLACE)
@pytest.mark.parametrize("causal", [False, True])
def test_permutation_error_against_permutation_matrices(encoding, causal):
    """Our index shuffle equals the textbook P X with an explicit permutation matrix."""
    case = eq.Case(encoding, causal, 2, "float64", seed=3)
    stack = eq.build_stack(case, tiny_cfg(), ENCODING_CFG, CPU)
    g = torch.Generator().manual_seed(1)
    x = torch.randn(2, 5, 8, generator=g, dtype=torch.float64)
    perms = eq.random_permutations(3, 5, g)
    got = eq.permutation_errors(stack, x, perms)
    with torch.no_grad():
        y = stack(x)
        for perm, err in zip(perms, got):
            P = torch.zeros(5, 5, dtype=torch.float64)
            P[torch.arange(5), perm] = 1.0  # (P X)[i] = X[perm[i]]
            want = (stack(P @ x) - P @ y).abs().max() / y.abs().max()
            assert err == pytest.approx(want.item(), rel=1e-9, abs=1e-15)
    if not REGISTRY[encoding].positional and not causal:
        assert max(got) < 64 * torch.finfo(torch.float64).eps
    else:
        assert min(got) > 1e-4


def test_shift_errors_against_direct_calls():
    cfg = tiny_cfg()
    x = torch.randn(1, 5, 8, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    positions = torch.arange(5)
    for encoding in ALL:
        invariant = REGISTRY[encoding].relative  # scores depend on p - q only
        stack = eq.build_stack(eq.Case(encoding, True, 2, "float64", 0), cfg, ENCODING_CFG, CPU)
        got = eq.shift_errors(stack, x, [7])[0]
        with torch.no_grad():
            y = stack(x, positions)
            want = ((stack(x, positions + 7) - y).abs().max() / y.abs().max()).item()
        assert got == pytest.approx(want, rel=1e-9, abs=1e-18)
        assert (got < 1e-12) if invariant else (got > 1e-2)


def test_random_permutations_skip_identity_and_reversal():
    g = torch.Generator().manual_seed(0)
    perms = eq.random_permutations(200, 3, g)
    assert {tuple(p.tolist()) for p in perms} == {(0, 2, 1), (1, 0, 2), (1, 2, 0), (2, 0, 1)}
    with pytest.raises(ValueError, match="at least 3"):
        eq.random_permutations(1, 2, g)


def test_learned_encodings_are_redrawn_so_t5_is_not_nope():
    stack = eq.build_stack(
        eq.Case("t5_bias", False, 1, "float32", 0), tiny_cfg(), ENCODING_CFG, CPU
    )
    assert stack.encoding.bias.weight.abs().max() > 0


def test_float64_models_get_float64_angles():
    stack = eq.build_stack(eq.Case("rope", False, 1, "float64", 0), tiny_cfg(), ENCODING_CFG, CPU)
    assert stack.encoding.params.angle_dtype == torch.float64


def test_config_tolerances_separate_equal_from_broken():
    """Every dtype's 'equal' tolerance must sit below the 'broken' threshold, or a case could be
    both; checked on the shipped config."""
    root = Path(__file__).resolve().parents[1]
    cfg = yaml.safe_load((root / "config/config.yaml").read_text())["equivariance"]
    th = cfg["thresholds"]
    for dt in cfg["dtypes"]:
        assert eq.tolerance(getattr(torch, dt), th["equal_ulps"]) < th["broken_min"]


def test_compute_tiny_all_claims_pass_and_is_deterministic():
    cfg = tiny_cfg()
    first, claims = run(cfg, ALL)
    assert {c["id"] for c in claims} == IDS
    assert all(c["verdict"] == "pass" for c in claims), claims
    again, _ = run(cfg, ALL)
    assert again.rows == first.rows
    # encodings x 2 attentions x 2 depths x 2 dtypes x 1 seed x (2 random + reversal)
    assert len(first.rows["permutation_errors"]) == len(ALL) * 24


def test_claims_fail_on_broken_measurements():
    """A 'NoPE' model that is not equivariant, or a 'relative' encoding that moves with the
    shift, must give fail: the verdicts are not hard-wired."""
    cfg = tiny_cfg(dtypes=["float32"])
    seed = {"no_pe_max_abs": 1.0, "pe_max_abs": 0.0, "no_pe_allclose": False, "pe_allclose": True}
    positional = [e for e in ALL if REGISTRY[e].positional]
    free = [e for e in ALL if not REGISTRY[e].positional]
    row = {"attention": "bidirectional", "n_layers": 1, "dtype": "float32", "seed": 0}
    perm_rows = [
        {**row, "encoding": e, "permutation": "random 0", "relative_error": 1e-3} for e in ALL
    ]
    shift_rows = [{**row, "encoding": e, "shift": 1, "relative_error": 1e-3} for e in ALL]
    perm_rows += [
        {**row, "encoding": e, "attention": "causal", "perm": 0, "relative_error": 0.0}
        for e in free
    ]
    assert positional and free
    evidence = eq.evidence(seed, perm_rows, shift_rows, cfg, ALL)
    verdicts = {c["id"]: c["verdict"] for c in evaluate(SPEC.claims, evidence, cfg, "eq")}
    assert verdicts == {
        "equivariance.seed_check": "fail",
        "equivariance.no_pe_bidirectional": "fail",
        "equivariance.pe_breaks": "pass",
        "equivariance.causal_breaks": "fail",
        "equivariance.relative_shift_invariance": "fail",
    }


def test_claims_not_applicable_without_nope():
    relative = next(e for e in ALL if REGISTRY[e].positional and REGISTRY[e].relative)
    _, claims = run(tiny_cfg(n_perms=1, dtypes=["float64"]), [relative])
    verdicts = {c["id"]: c["verdict"] for c in claims}
    assert verdicts["equivariance.no_pe_bidirectional"] == "n/a"
    assert verdicts["equivariance.causal_breaks"] == "n/a"
    assert verdicts["equivariance.relative_shift_invariance"] == "n/a"  # no absolute encoding
    assert verdicts["equivariance.pe_breaks"] == "pass"


@pytest.mark.parametrize("causal", [False, True])
def test_bidirectional_alibi_cannot_see_a_reversal(causal):
    """-m|i - j| keeps every distance under i -> L-1-i: bidirectional ALiBi is reversal-
    equivariant, RoPE (signed offsets) is not, and the causal mask breaks it for both."""
    x = torch.randn(1, 5, 8, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    reversal = [torch.arange(4, -1, -1)]
    errors = {}
    for encoding in ("alibi", "rope"):
        case = eq.Case(encoding, causal, 2, "float64", seed=0)
        errors[encoding] = eq.permutation_errors(
            eq.build_stack(case, tiny_cfg(), ENCODING_CFG, CPU), x, reversal
        )[0]
    if causal:
        assert errors["alibi"] > 1e-4
    else:
        assert errors["alibi"] < 64 * torch.finfo(torch.float64).eps
    assert errors["rope"] > 1e-4


def test_summary_flags_reversal_and_weakest_model():
    m, claims = run(tiny_cfg(dtypes=["float64"]), ["alibi"])
    bidirectional = next(r for r in m.summary["permutation"] if r["attention"] == "bidirectional")
    assert bidirectional["reversal"] < 1e-12
    # The random permutations still break it: the claim holds on this encoding alone.
    assert next(c for c in claims if c["id"] == "equivariance.pe_breaks")["verdict"] == "pass"
    rows = [r for r in m.rows["permutation_errors"] if r["attention"] == "bidirectional"]
    by_model = {}
    for r in rows:
        key = (r["n_layers"], r["seed"])
        by_model[key] = max(by_model.get(key, 0.0), r["relative_error"])
    assert bidirectional["weakest_float64"] == min(by_model.values())


def test_shipped_section_is_valid_and_bad_values_are_rejected():
    from jsonschema import Draft202012Validator

    root = Path(__file__).resolve().parents[1]
    schema = yaml.safe_load((root / "analyses/equivariance/schema.yaml").read_text())
    validator = Draft202012Validator(schema)
    cfg = yaml.safe_load((root / "config/config.yaml").read_text())["equivariance"]
    assert not list(validator.iter_errors(cfg))
    for bad in (
        {**cfg, "seq_len": 2},
        {**cfg, "dtypes": ["float16"]},
        {**cfg, "n_perm": 3},
        {**cfg, "shifts": [0]},
    ):
        assert list(validator.iter_errors(bad)), bad


def test_figure_bars_leave_out_the_reversal_and_mark_it_apart():
    """A bias symmetric in |i - j| is unchanged by the reversal (error ~1e-16) while the random
    permutations break it: the bar must span the random permutations only, the reversal its own
    cross; rows without a permutation (the shifts) are all barred."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from posenc.analyses.equivariance import present

    common = {"encoding": "e", "dtype": "float64", "n_layers": 1}
    rows = [
        {**common, "permutation": "random 0", "relative_error": 0.1},
        {**common, "permutation": "random 1", "relative_error": 0.2},
        {**common, "permutation": "reversal", "relative_error": 1e-16},
    ]
    fig, ax = plt.subplots()
    present._error_panel(ax, rows, ["e"], ["float64"], [1], floor=1e-20)
    bars = [line for line in ax.lines if len(line.get_ydata()) == 2]
    assert [list(b.get_ydata()) for b in bars] == [[0.1, 0.2]]
    crosses = [line for line in ax.lines if line.get_marker() == "x"]
    assert [list(c.get_ydata()) for c in crosses] == [[1e-16]]
    plt.close(fig)

    shifts = [{**common, "shift": c, "relative_error": e} for c, e in ((3, 1e-3), (40, 1e-2))]
    fig, ax = plt.subplots()
    present._error_panel(ax, shifts, ["e"], ["float64"], [1], floor=1e-20)
    assert [list(b.get_ydata()) for b in ax.lines if len(b.get_ydata()) == 2] == [[1e-3, 1e-2]]
    assert not [line for line in ax.lines if line.get_marker() == "x"]
    plt.close(fig)
