"""Permutation equivariance of attention, what breaks it, and shift invariance of relative
encodings. Torch-free: read by the workflow at parse time."""

from posenc.analysis import AnalysisSpec, CardColumn, Figure, Resources, Table
from posenc.claims import Check, Claim

# The check of "Transformers · Positional encoding", as that document writes it:
# nn.MultiheadAttention(SEED_EMBED_DIM, SEED_HEADS) on SEED_LEN tokens, without and with the
# first SEED_EMBED_DIM dimensions of a sinusoidal table SEED_TABLE_DIM wide. The claim, the
# table and the section's prose quote these.
SEED_EMBED_DIM, SEED_HEADS, SEED_LEN = 16, 2, 5
SEED_TABLE_DIM = 64
SEED_ATTENTION = f"nn.MultiheadAttention({SEED_EMBED_DIM}, {SEED_HEADS})"


def check_heads(config: dict) -> list[str]:
    """Heads split the width evenly, into an even head width (RoPE rotates pairs)."""
    cfg = config.get("equivariance", {})
    d, h = cfg.get("d_model"), cfg.get("n_heads")
    if d and h and d % h:
        return [f"config key equivariance.d_model = {d}: not divisible by n_heads = {h}"]
    if d and h and (d // h) % 2:
        return [
            f"config key equivariance.d_model = {d}: head width d_model/n_heads = {d // h} "
            "must be even for RoPE"
        ]
    return []


def encoding_shapes(config: dict) -> dict[str, tuple[int, int]]:
    """The one width every case builds its encodings at."""
    cfg = config["equivariance"]
    d, h = cfg["d_model"], cfg["n_heads"]
    return {f"equivariance.d_model = {d}, equivariance.n_heads = {h}": (d, h)}


SPEC = AnalysisSpec(
    id="equivariance",
    title="Permutation equivariance, and what breaks it",
    csvs=("permutation_errors", "shift_errors"),
    figures={
        "permutation": Figure(
            "Relative permutation error of {n_permutation_cases} (model, input, permutation) "
            "cases: bars span min to max over models and the random permutations, markers "
            "show the max (circles one layer, squares the stack). The reversal is kept out of "
            "the bars and shown apart (crosses, its largest error): under it a bias that "
            "depends on |i − j| only, such as bidirectional ALiBi's, is unchanged, so its error "
            "sits at rounding while every other permutation breaks the model. Dashed lines are "
            "the per-dtype tolerance, the dotted line the 'broken' threshold; exact zeros sit "
            "at the bottom."
        ),
        "shift": Figure(
            "Relative change of the output when every position is shifted by c in {shifts}, "
            "bidirectional and causal pooled; lines as in the permutation figure."
        ),
    },
    tables={
        "seed": Table(
            f"The check “Transformers · Positional encoding” runs ({SEED_ATTENTION}, "
            f"{SEED_LEN} tokens): max |Attn(PX) − P Attn(X)| and torch.allclose as it calls it."
        ),
        "permutation": Table(
            "Relative permutation error per encoding and attention: the largest over every "
            "model and permutation, the weakest model's largest, and the largest under the "
            "reversal.",
            csv="permutation_errors",
            placement="appendix",
        ),
        "shift": Table(
            "Relative change of the output when every position is shifted by the same "
            "constant: the largest over every model and shift, and the weakest model's largest.",
            csv="shift_errors",
            placement="appendix",
        ),
    },
    claims=(
        Claim(
            "equivariance.seed_check",
            f"The check “Transformers · Positional encoding” runs: {SEED_ATTENTION} "
            "without positions only permutes its output, and after adding sinusoidal PE it does "
            "not: the largest difference stays within that document's atol without PE and "
            "exceeds it with PE (the document itself prints True, True).",
            kind="software",
            checks=(
                Check("seed.no_pe_max_abs", "<=", "seed_atol_equal", label="no PE max|diff|"),
                Check("seed.pe_max_abs", ">", "seed_atol_broken", label="with PE max|diff|"),
            ),
            references=("seed_snippet",),
        ),
        Claim(
            "equivariance.no_pe_bidirectional",
            "Without positions, bidirectional attention (one layer and a stack) is "
            "permutation-equivariant: Attn(PX) = P Attn(X) up to rounding.",
            kind="identity",
            checks=(
                Check(
                    "no_pe_ulps",
                    "<=",
                    "equal_ulps",
                    label="NoPE's largest relative error over every model and permutation, "
                    "in eps(dtype),",
                ),
            ),
            references=("seed_snippet", "seed_article"),
        ),
        Claim(
            "equivariance.pe_breaks",
            "Every positional encoding breaks permutation equivariance of bidirectional "
            "attention, in every random model tried; each number is the least broken model's "
            "largest error over its permutations.",
            kind="empirical",
            checks=(Check("pe_weakest", ">", "broken_min", label="weakest model's largest error"),),
            references=("seed_snippet", "seed_article"),
        ),
        Claim(
            "equivariance.causal_breaks",
            "A causal mask alone breaks permutation equivariance, with no positional encoding: "
            "a NoPE decoder can still tell positions apart; each number is the least broken "
            "model's largest error over its permutations.",
            kind="empirical",
            checks=(
                Check(
                    "causal_weakest",
                    ">",
                    "broken_min",
                    label="NoPE causal, weakest model's largest error",
                ),
            ),
            references=("haviv2022",),
        ),
        Claim(
            "equivariance.relative_shift_invariance",
            "Shifting every position by the same constant leaves the output of relative "
            "schemes ({relative}) unchanged and changes that of absolute ones ({absolute}).",
            kind="identity",
            checks=(
                Check(
                    "relative_shift_ulps",
                    "<=",
                    "equal_ulps",
                    label="relative: largest relative error in eps(dtype)",
                ),
                Check(
                    "absolute_shift_weakest",
                    ">",
                    "broken_min",
                    label="absolute: the least changed model's largest error",
                ),
            ),
            references=("su2021", "press2022", "raffel2020"),
        ),
    ),
    references=("haviv2022", "higham2002"),
    resources=Resources(threads=1, mem_mb=2000, runtime=15),
    checks=(check_heads,),
    encoding_shapes=encoding_shapes,
    card=(
        CardColumn(
            "breaks equivariance",
            "pe_weakest",
            claim="equivariance.pe_breaks",
            note="bidirectional attention with the encoding: the least broken random model's "
            "largest relative error under a permutation (NoPE is exactly equivariant)",
        ),
        CardColumn(
            "shift invariance",
            ("relative_shift_ulps", "absolute_shift_weakest"),
            claim="equivariance.relative_shift_invariance",
            note="outputs under a shift of every position: relative encodings, the largest "
            "change in eps of the dtype (unchanged up to rounding); absolute ones, the least "
            "changed model's largest change (they do change)",
            # On absolute encodings the claim holds where the outputs change: they lack it.
            asserts_absence=("absolute_shift_weakest",),
            units=(("relative_shift_ulps", "ε", 1), ("absolute_shift_weakest", "%", 100)),
        ),
    ),
    constants={
        "seed_attention": SEED_ATTENTION,
        "seed_len": SEED_LEN,
        "seed_embed_dim": SEED_EMBED_DIM,
        "seed_table_dim": SEED_TABLE_DIM,
    },
)
