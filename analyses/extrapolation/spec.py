"""Train short, test long: a character LM and a passkey-retrieval model per encoding and seed,
trained at one length and evaluated at multiples of it. Torch-free: read by the workflow at
parse time. The training and evaluation stages are in ``rules.smk``; this spec is the
aggregate, which reads every model's evaluation and training log."""

from pathlib import Path
from typing import NamedTuple

from posenc import paths, variants
from posenc.analysis import AnalysisSpec, CardColumn, Figure, Resources, Table
from posenc.claims import Check, Claim
from posenc.corpora import corpus_file

TASKS = ("lm", "passkey")
# Press et al. (2022) train T5's bias at L_train >= 4x its maximum distance (extrapolation.t5_mild
# follows them): the LM's L_train must be at least this multiple of encoding.t5_bias.max_distance.
T5_TRAIN_RATIO = 4
# Li et al. (2024) train FIRE at 2048 and evaluate up to 8192: extrapolation.fire_best_long is
# judged at this multiple of L_train, theirs, and shows the other lengths beside it.
FIRE_JUDGED_AT = 4


def inputs(config: dict) -> dict[str, list[str]]:
    """Every model's evaluation, training log and training timings: one per task x encoding x
    seed, in that order (the output paths of the stages in ``rules.smk``)."""
    runs = [
        {"task": task, "encoding": model, "seed": seed}
        for task in TASKS
        for model in variants.models(config, task)
        for seed in config["extrapolation"][task]["seeds"]
    ]
    files = {
        "evaluations": [paths.XP_EVALUATION.format(**run) for run in runs],
        "train_logs": [paths.XP_TRAIN_LOG.format(**run) for run in runs],
        "timings": [paths.XP_TIMING.format(**run) for run in runs],
    }
    # The corpus file, when one is configured: its unigram and bigram baselines are computed
    # here (the built-in texts, pydoc_data.topics and python-stdlib, ship with Python and are
    # no file input).
    if corpus_file(config["extrapolation"]["corpus"]):
        files["corpus"] = [corpus_file(config["extrapolation"]["corpus"])]
    return files


def check_config(config: dict) -> list[str]:
    """Cross-field rules of the extrapolation section (the schema checks each field alone)."""
    cfg = config.get("extrapolation")
    if not cfg:
        return []
    problems = []
    model = cfg["model"]
    d, h = model["d_model"], model["n_heads"]
    if d % h or (d // h) % 2 or d // h <= 2:
        problems.append(
            f"config key extrapolation.model.d_model = {d}: must split into n_heads = {h} heads "
            "of even width > 2 (RoPE rotates pairs; NTK scaling divides by head_dim - 2)"
        )
    t5 = config.get("encoding", {}).get("t5_bias", {})
    seq_len, t5_max = cfg["lm"]["seq_len"], t5.get("max_distance")
    if t5_max and seq_len < T5_TRAIN_RATIO * t5_max:
        problems.append(
            f"config key extrapolation.lm.seq_len = {seq_len}: below {T5_TRAIN_RATIO} x "
            f"encoding.t5_bias.max_distance = {T5_TRAIN_RATIO * t5_max}; Press et al. (2022) train "
            f"T5's bias at L_train >= {T5_TRAIN_RATIO} x its maximum distance, so that its last "
            "bucket (every distance from about the maximum on) is trained: lower "
            "encoding.t5_bias.max_distance or raise the L_train"
        )
    for task in TASKS:
        multipliers = cfg[task]["eval"]["multipliers"]
        if 1 not in multipliers:
            problems.append(
                f"config key extrapolation.{task}.eval.multipliers = {multipliers}: must include "
                "1 (the training length, the reference for every comparison)"
            )
    if 2 not in cfg["lm"]["eval"]["multipliers"]:
        problems.append(
            f"config key extrapolation.lm.eval.multipliers = {cfg['lm']['eval']['multipliers']}: "
            "must include 2 (NTK scaling is claimed at 2x L_train)"
        )
    if FIRE_JUDGED_AT not in cfg["lm"]["eval"]["multipliers"]:
        problems.append(
            f"config key extrapolation.lm.eval.multipliers = {cfg['lm']['eval']['multipliers']}: "
            f"must include {FIRE_JUDGED_AT} (FIRE is claimed at {FIRE_JUDGED_AT}x L_train, the "
            "longest ratio Li et al. evaluate)"
        )
    tokens = cfg["lm"]["eval"]["tokens"]
    uneven = [m * seq_len for m in cfg["lm"]["eval"]["multipliers"] if tokens % (m * seq_len)]
    if uneven:
        problems.append(
            f"config key extrapolation.lm.eval.tokens = {tokens}: must be a multiple of every "
            f"evaluation length (not of {', '.join(map(str, uneven))}), so that every length "
            "scores the same number of tokens in whole windows"
        )
    segment = cfg["lm"]["eval"]["segment"]
    if segment > seq_len:
        problems.append(
            f"config key extrapolation.lm.eval.segment = {segment}: must be <= "
            f"extrapolation.lm.seq_len = {seq_len} (the scored segment fits the shortest window)"
        )
    task = cfg["passkey"]["task"]
    if task["min_len"] > task["max_len"]:
        problems.append(
            f"config key extrapolation.passkey.task.min_len = {task['min_len']}: must be <= "
            f"extrapolation.passkey.task.max_len = {task['max_len']}"
        )
    shortest = 2 * task["key_len"] + 1  # KEY, the key, QUERY and the fed answer
    if task["min_len"] < shortest:
        problems.append(
            f"config key extrapolation.passkey.task.min_len = {task['min_len']}: must be >= "
            f"2 extrapolation.passkey.task.key_len + 1 = {shortest} (KEY, the key, QUERY and "
            "the answer fed back)"
        )
    corpus = corpus_file(cfg["corpus"])
    if corpus is not None and not Path(corpus).is_file():
        problems.append(f"config key extrapolation.corpus = {corpus!r}: no such file")
    return problems + _randomized_problems(config)


def _randomized_problems(config: dict) -> list[str]:
    """Randomized positions: each listed encoding is also trained plainly (the comparison), and
    L_rand holds every position an evaluation of the task draws."""
    cfg = config["extrapolation"]
    randomized = cfg.get("randomized_positions")
    if not randomized:
        return []
    problems = []
    longest_train = {"lm": cfg["lm"]["seq_len"], "passkey": cfg["passkey"]["task"]["max_len"]}
    for task, encodings in randomized["encodings"].items():
        key = f"extrapolation.randomized_positions.encodings.{task}"
        missing = [e for e in encodings if e not in config["encodings"]]
        if missing:
            problems.append(
                f"config key {key} = {encodings}: {', '.join(missing)} not in encodings (each "
                "randomized model is compared with the same encoding trained plainly)"
            )
        longest = max(cfg[task]["eval"]["multipliers"]) * longest_train[task]
        if encodings and randomized["max_position"] < longest:
            problems.append(
                "config key extrapolation.randomized_positions.max_position = "
                f"{randomized['max_position']}: below the longest {task} evaluation length "
                f"{longest} (extrapolation.{task}.eval.multipliers x the training length); a "
                "sequence draws that many distinct positions from [0, L_rand)"
            )
    return problems


def check_registry(config: dict, encodings: dict[str, dict]) -> list[str]:
    """Randomized positions need an encoding that takes positions (the registry says which)."""
    randomized = (config.get("extrapolation") or {}).get("randomized_positions") or {}
    problems = []
    for task, names in (randomized.get("encodings") or {}).items():
        blind = [e for e in names if encodings.get(e, {}).get("acts_on") == "none"]
        if blind:
            problems.append(
                f"config key extrapolation.randomized_positions.encodings.{task} = {names}: "
                f"{', '.join(blind)} takes no positions, so randomizing them changes nothing"
            )
    return problems


def encoding_shapes(config: dict) -> dict[str, tuple[int, int]]:
    """The trained models' width (both tasks; the similarity section reads them too)."""
    model = config["extrapolation"]["model"]
    d, h = model["d_model"], model["n_heads"]
    return {f"extrapolation.model.d_model = {d}, extrapolation.model.n_heads = {h}": (d, h)}


# Preconditions (posenc.claims.Claim.requires): an LM claim reads models that learned the task
# (below the interpolated trigram at L_train), a passkey claim encodings with enough seeds that
# learned it at N. Either missing: the claim is inconclusive, with the numbers.
LEARNED = Check(
    "lm_learned_margin",
    ">",
    "lm_learned_margin_bits",
    label="bits/char below the interpolated trigram at L_train",
)


def learned(*encodings: str) -> tuple[Check, ...]:
    """The LMs of ``encodings`` learned: each below the interpolated trigram at L_train."""
    return tuple(
        Check(
            f"lm_learned_margin.{e}",
            ">",
            "lm_learned_margin_bits",
            label=f"{e} bits/char below the interpolated trigram at L_train",
        )
        for e in encodings
    )


def learners(evidence: str, who: str) -> tuple[Check, ...]:
    """Enough of ``who``'s passkey seeds learned the task at N."""
    return (
        Check(
            evidence,
            ">=",
            "passkey_min_learners",
            label=f"seeds of {who} that learned the task at N",
        ),
    )


class LengthClaim(NamedTuple):
    """One of the literature's claims on how a model's loss moves beyond L_train, as the
    claims below judge it: what the paper reports, and the direction and threshold that
    decide it."""

    claim: str  # the id, after "extrapolation."
    encodings: tuple[str, ...]  # the encoding, and the one it is compared with (if any)
    direction: str  # a key of DIRECTIONS
    threshold: str
    statement: str  # with the paper's numbers, or its words
    references: tuple[str, ...]
    also_shows: tuple[str, ...] = ()  # shown beside the direction's own context


# What each direction measures on the same scored tokens (mode b), how it is compared with its
# threshold, the check's label, and the losses shown beside it; {e} is the encoding, {other}
# the one it is compared with.
CHANGE_SHOWS = ("bits_at_1x.{e}", "bits_at_longest.{e}")
DIRECTIONS = {
    "degrades": ("far_change.{e}", ">=", "{e} bits/char increase", CHANGE_SHOWS),
    "degrades_mildly": ("far_change.{e}", "<", "{e} bits/char increase", CHANGE_SHOWS),
    "flat": ("far_change.{e}", "<=", "{e} bits/char change", CHANGE_SHOWS),
    "beats_long": (
        "far_lead.{e}.{other}",
        ">",
        "{other} minus {e} bits/char",
        ("bits_at_longest.{e}", "bits_at_longest.{other}"),
    ),
    "degrades_less": (
        "far_change_lead.{e}.{other}",
        ">",
        "{other}'s rise minus {e}'s rise, bits/char",
        ("far_change.{e}", "far_change.{other}"),
    ),
}

LITERATURE = (
    LengthClaim(
        "sinusoidal_degrades",
        ("sinusoidal",),
        "degrades",
        "degrade_min_bits",
        "Sinusoidal degrades beyond L_train: its bits/char on the same scored tokens (mode b) rise "
        "from 1x to {longest}x L_train (Press et al.: 20.05 -> 406 ppl at 30x).",
        ("press2022",),
    ),
    LengthClaim(
        "rope_degrades",
        ("rope",),
        "degrades",
        "degrade_min_bits",
        "RoPE degrades beyond L_train: its bits/char on the same scored tokens (mode b) rise from "
        "1x to {longest}x L_train (Press et al.: 20.07 -> 79.3 ppl).",
        ("press2022",),
    ),
    LengthClaim(
        "alibi_flat",
        ("alibi",),
        "flat",
        "flat_margin_bits",
        "ALiBi's loss stays flat (or falls) beyond L_train: its bits/char on the same scored "
        "tokens (mode b) at {longest}x L_train are about those at 1x. Flat says the longer context "
        "does no harm, not that the model uses it: Press et al. attribute the flat loss to ALiBi's "
        "recency bias, which down-weights distant tokens, and trace its gain in non-overlapping "
        "windows (19.73 -> 18.31 ppl) to their early tokens getting more context (App. B). Mode "
        "a's change, where that effect is, is shown beside mode b's.",
        ("press2022",),
        also_shows=("far_change_all.alibi",),
    ),
    LengthClaim(
        "alibi_beats_sinusoidal_long",
        ("alibi", "sinusoidal"),
        "beats_long",
        "beats_margin_bits",
        "At {longest}x L_train ALiBi's loss (mode b) is lower than sinusoidal's (Press et al.: "
        "18.31 vs 406 ppl).",
        ("press2022",),
    ),
    LengthClaim(
        "kerple_flat",
        ("kerple",),
        "flat",
        "flat_margin_bits",
        "Kerple's logarithmic bias stays flat beyond L_train, like ALiBi: its bits/char (mode b) "
        "at {longest}x L_train are about those at 1x (Chi et al. 2022 report perplexity flat or "
        "falling to 16x the training length).",
        ("chi2022",),
    ),
    LengthClaim(
        "xpos_degrades_less",
        ("xpos", "rope"),
        "degrades_less",
        "beats_margin_bits",
        "xPos degrades less than RoPE beyond L_train: its bits/char (mode b) rise less from 1x to "
        "{longest}x L_train than RoPE's (Sun et al. 2022).",
        ("sun2022", "su2021"),
    ),
    LengthClaim(
        "t5_mild",
        ("t5_bias",),
        "degrades_mildly",
        "degrade_min_bits",
        "T5's bucketed relative bias, trained as Press et al. train it (L_train at least "
        f"{T5_TRAIN_RATIO}x its maximum distance, checked before any run, so that its last "
        "bucket, shared by every "
        "distance from about the maximum on, is trained), degrades only mildly beyond L_train: its "
        "bits/char (mode b) rise from 1x to {longest}x L_train by less than what counts as "
        "degrading (Press et al.: 19.65 -> 22.9 ppl at 30x, where sinusoidal reaches 406).",
        ("press2022", "raffel2020"),
    ),
    LengthClaim(
        "nope_flat",
        ("none",),
        "flat",
        "flat_margin_bits",
        "A causal model without positional encoding extrapolates: NoPE's bits/char (mode b) at "
        "{longest}x L_train are about those at 1x (Kazemnejad et al. find NoPE generalises in "
        "length; Haviv et al. that causal attention infers position).",
        ("kazemnejad2023", "haviv2022"),
    ),
)


def length_claim(row: LengthClaim) -> Claim:
    """The claim of one row of :data:`LITERATURE`, on the models that learned the LM task."""
    evidence, op, label, shows = DIRECTIONS[row.direction]
    names = dict(zip(("e", "other"), row.encodings))
    return Claim(
        f"extrapolation.{row.claim}",
        row.statement,
        kind="empirical",
        requires=learned(*row.encodings),
        checks=(Check(evidence.format(**names), op, row.threshold, label=label.format(**names)),),
        shows=tuple(s.format(**names) for s in shows) + row.also_shows,
        references=row.references,
        unless="smoke_test",
    )


# By id: the ledger lists each where it stands among the other claims, in the order it always had.
LENGTH_CLAIMS = {row.claim: length_claim(row) for row in LITERATURE}


SPEC = AnalysisSpec(
    id="extrapolation",
    title="Extrapolation: train short, test long",
    csvs=("lm_bits", "passkey_accuracy", "training_timing"),
    inputs=inputs,
    figures={
        "bits_vs_length": Figure(
            "Validation loss versus evaluation length for models trained at L_train = "
            "{train_len} (dashed grey line), up to {longest}x L_train, in both scoring modes; "
            "line: mean over seeds, band: its {interval_percent}% interval (bootstrap over "
            "seeds and windows). The learned table has no value past L_train "
            "(undefined). The +PI and +NTK curves are a model evaluated with Position "
            "Interpolation and NTK-aware scaling, without fine-tuning: same colour as RoPE, "
            "each with its own line style and hollow marker. Grey horizontal lines: reference "
            "bits/char of the validation text, uniform "
            "(log2 V, V = {vocab_size} characters), and unigram and bigram models estimated "
            "on the training text with add-one (Laplace) smoothing."
        ),
        "passkey_accuracy": Figure(
            "Passkey retrieval: exact-match accuracy (every token of the key right) versus "
            "sequence length for models trained on lengths up to N = {passkey_train_len} "
            "(dashed grey line); dotted: chance, a uniform guess of the whole key. "
            "Line: mean over seeds; band: its {interval_percent}% interval (bootstrap over "
            "seeds and test sequences). "
            "Each encoding's points are shifted slightly sideways, so that series with equal "
            "accuracies (at 1.0, say) do not hide one another."
        ),
        "training_curves": Figure(
            "Training curves (moving average, mean over seeds). Character LM: grey horizontal "
            "lines mark the reference bits/char of the validation text, uniform (log2 V), and "
            "unigram and bigram models estimated on the training text with add-one (Laplace) "
            "smoothing."
        ),
    },
    tables={
        "segment": Table(
            "Validation bits/char by evaluation length, mode (b): the same final segment of "
            "each window is scored at every length: mean over seeds [{interval_percent}% "
            "interval], each seed's value where the seeds disagree (their own intervals do not "
            "overlap), and the tokens each number rests on per model. Rows "
            "uniform to 5-gram: the n-gram ladder, reference bits/char of the validation text "
            "(log2 V; unigram and bigram with add-one smoothing, 3- to 5-grams with interpolated "
            "Kneser-Ney, all counted on the training text), the same at every length.",
            csv="lm_bits",
        ),
        "all": Table(
            "Validation bits/char by evaluation length, mode (a): every token of "
            "non-overlapping windows, the same number of tokens at every length: mean over "
            "seeds [{interval_percent}% interval], each seed's value where the seeds disagree, "
            "and the tokens per model. Rows uniform to 5-gram: the n-gram ladder, reference "
            "bits/char of the validation text (log2 V; unigram and bigram with add-one "
            "smoothing, 3- to 5-grams with interpolated Kneser-Ney, all counted on the "
            "training text), the same at every length.",
            csv="lm_bits",
        ),
        "passkey": Table(
            "Passkey retrieval: exact-match accuracy by sequence length: mean over every seed "
            "[{interval_percent}% interval], each seed's value where the seeds disagree. The "
            "claims read the means over the seeds that learned the task at N only "
            "(the table of learners).",
            csv="passkey_accuracy",
        ),
        "learned": Table(
            "Which trained models learned their task, the precondition of every claim on "
            "them. Language models: validation bits/char at L_train (mode a) against the "
            "interpolated Kneser-Ney trigram of the training text (learned: below it), whether "
            "it is below the 4-gram too (the training recipe's aim for every encoding but "
            "NoPE), and how much the training loss fell over the last tenth of the steps "
            "(plateaued: under {plateau_bits:g} bits/char). Passkey: the seeds whose exact "
            "match at N is at least {passkey_learned_at:g}, of all seeds.",
        ),
        "extensions": Table(
            "Context extensions evaluated without fine-tuning: how much each lowers the plain "
            "model's bits/char (mode b) at every length past L_train [{interval_percent}% "
            "interval]; positive is better.",
            csv="lm_bits",
        ),
        "gap": Table(
            "Train/validation gap at L_train (bits/char, mode a): mean over seeds "
            "[{interval_percent}% interval] and each seed's gap.",
            csv="lm_bits",
        ),
        "training": Table(
            "Training runs: device, throughput, wall time, peak memory (timings).",
            csv="training_timing",
        ),
    },
    # The training runs' speed and memory differ between identical runs: timing.json.
    timing_tables=("training",),
    claims=(
        Claim(
            "extrapolation.in_distribution_parity",
            "At L_train = {train_len}, each of the four encodings Press et al. compared "
            "(sinusoidal, rotary, T5 bias, ALiBi) has a validation loss (mode a) close to the "
            "best one's ({parity_best}, {parity_best_bits} bits/char). Press et al.'s Table 2 "
            "has them within 2 % in word perplexity (19.65-20.07 ppl): 0.03 bits per word, "
            "under 0.01 bits per character at WikiText-103's ~5.6 characters per word; the "
            "margin here, in bits/char, allows for a much smaller model trained far shorter.",
            kind="empirical",
            requires=learned("sinusoidal", "rope", "t5_bias", "alibi"),
            checks=tuple(
                Check(
                    f"behind_best.{e}",
                    "<=",
                    "parity_margin_bits",
                    label=f"{e} bits/char behind the best",
                )
                for e in ("sinusoidal", "rope", "t5_bias", "alibi")
            ),
            shows=("parity_best_bits", "behind_best.none", "behind_best.learned"),
            references=("press2022",),
            unless="smoke_test",
        ),
        Claim(
            "extrapolation.learned_undefined_beyond_lmax",
            "A learned table of L_max = L_train rows gives a loss at L_train and reports every "
            "longer length as undefined (no rows beyond L_max), not a crash and not a number.",
            kind="software",
            checks=(
                Check("defined_at_train.learned", value=True, label="learned defined at L_train"),
                Check(
                    "defined_beyond_train.learned",
                    value=False,
                    label="learned defined past L_train",
                ),
            ),
            shows=("bits_at_1x.learned",),
            references=("devlin2019",),
        ),
        LENGTH_CLAIMS["sinusoidal_degrades"],
        LENGTH_CLAIMS["rope_degrades"],
        LENGTH_CLAIMS["alibi_flat"],
        LENGTH_CLAIMS["alibi_beats_sinusoidal_long"],
        LENGTH_CLAIMS["kerple_flat"],
        Claim(
            "extrapolation.fire_best_long",
            f"At {FIRE_JUDGED_AT}x L_train, the longest ratio Li et al. (2024) evaluate (trained "
            "at 2048, tested up to 8192), FIRE's loss (mode b) is at least as good as ALiBi's "
            "and Kerple's and better than RoPE's and T5's (Li et al.: FIRE extrapolates best "
            "among these on long-context language modelling). The same differences at every "
            "other length past L_train are shown beside; they decide nothing.",
            kind="empirical",
            requires=learned("fire", "alibi", "kerple", "rope", "t5_bias"),
            checks=tuple(
                Check(
                    f"lead_by_length.{a}.{b}.{FIRE_JUDGED_AT}x",
                    op,
                    threshold,
                    label=f"{b} minus {a} bits/char at {FIRE_JUDGED_AT}x",
                )
                for a, b, op, threshold in (
                    ("alibi", "fire", "<=", "match_margin_bits"),
                    ("kerple", "fire", "<=", "match_margin_bits"),
                    ("fire", "rope", ">", "beats_margin_bits"),
                    ("fire", "t5_bias", ">", "beats_margin_bits"),
                )
            ),
            shows=(
                "lead_by_length.alibi.fire",
                "lead_by_length.kerple.fire",
                "lead_by_length.fire.rope",
                "lead_by_length.fire.t5_bias",
            ),
            references=("li2024",),
            unless="smoke_test",
        ),
        LENGTH_CLAIMS["xpos_degrades_less"],
        Claim(
            "extrapolation.ntk_helps_rope",
            "NTK-aware base scaling, applied at evaluation without fine-tuning, lowers RoPE's "
            "loss (mode b) at every length past L_train, not only at 2x.",
            kind="empirical",
            requires=learned("rope"),
            checks=(
                Check(
                    "extension_gain.rope.ntk",
                    ">",
                    "ntk_gain_bits",
                    label="rope minus rope+NTK bits/char",
                ),
            ),
            shows=("bits_at_2x.rope", "bits_at_2x.rope+NTK", "bits_at_2x.rope+PI"),
            references=("bloc97_2023", "peng2023"),
            unless="smoke_test",
        ),
        LENGTH_CLAIMS["t5_mild"],
        LENGTH_CLAIMS["nope_flat"],
        Claim(
            "extrapolation.alibi_passkey_long",
            "ALiBi's extrapolation carries over to retrieval: its passkey accuracy stays high "
            "at every tested length, up to the longest. Its bias penalises attention linearly "
            "with distance, so a key far from the query may be out of its reach.",
            kind="empirical",
            requires=learners("passkey_learners.alibi", "alibi"),
            checks=(
                Check(
                    "passkey_accuracy.alibi",
                    ">=",
                    "passkey_min_accuracy",
                    label="alibi passkey accuracy",
                ),
            ),
            references=("press2022", "mohtashami2023"),
            unless="smoke_test",
        ),
        Claim(
            "extrapolation.synthetic_length_generalization",
            "On passkey retrieval trained on lengths up to N, the best encoding "
            "({passkey_best}) keeps its exact-match accuracy at {passkey_at}N (chance "
            "{passkey_chance}); Kazemnejad et al. find some encodings generalise, and NoPE "
            "competitive.",
            kind="empirical",
            requires=learners("passkey_best_learners", "the best encoding"),
            checks=(
                Check(
                    "passkey_best_accuracy",
                    ">=",
                    "passkey_min_accuracy",
                    label="the best accuracy",
                ),
            ),
            # The best encodings' accuracies at passkey_at N are the checked values; every
            # other accuracy up to that length, and chance, are shown beside them.
            shows=("passkey_other_accuracies", "passkey_chance"),
            references=("kazemnejad2023", "mohtashami2023"),
            unless="smoke_test",
        ),
        Claim(
            "extrapolation.randomized_raises_passkey",
            "Randomized positions raise passkey accuracy at {passkey_at}N: an encoding trained "
            "and tested on sorted random positions from [0, L_rand) retrieves the key more often "
            "than the same encoding trained on 0..n-1 (Ruoss et al. 2023: +12 % accuracy on "
            "average over their tasks, for every encoding they tried).",
            kind="empirical",
            requires=learners("randomized_pair_learners", "both models"),
            checks=(
                Check(
                    "randomized_gain",
                    ">",
                    "randomized_gain_min",
                    label="accuracy with minus without randomized positions",
                ),
            ),
            shows=("randomized_accuracy",),
            references=("ruoss2023",),
            unless="smoke_test",
        ),
        Claim(
            "extrapolation.no_memorisation",
            "No model memorised its training text: the gap between its validation and training "
            "bits/char at L_train (mode a) grew by little over the passes after the first "
            "(final model minus the same model after one pass over the text, on the same "
            "windows, mean over seeds), for every encoding. The gap itself is shown beside: the "
            "held-out split is drawn from the same text (interleaved whole blocks, with every "
            "stretch that repeats training text removed), but its sampling alone leaves the gap "
            "an interval about as wide as the threshold, while the growth is paired window by "
            "window; extrapolation numbers mean something only if the model generalises.",
            kind="empirical",
            requires=(LEARNED,),
            checks=(
                Check(
                    "memorisation_growth",
                    "<=",
                    "memorisation_gap_bits",
                    label="growth of validation minus training bits/char after the first pass",
                ),
            ),
            shows=("memorisation_gap",),
            unless="smoke_test",
        ),
    ),
    references=(
        "press2022",
        "kazemnejad2023",
        "vaswani2017",
        "chen2023",
        "bloc97_2023",
        "peng2023",
        "mohtashami2023",
        "raffel2020",
        "haviv2022",
        "davison1997",
        "ruoss2023",
    ),
    resources=Resources(threads=1, mem_mb=2000, runtime=10),
    checks=(check_config,),
    registry_checks=(check_registry,),
    encoding_shapes=encoding_shapes,
    card=(
        CardColumn(
            "bits/char at 1×",
            "bits_at_1x",
            note="validation bits per character at the training length (mean over seeds)",
        ),
        CardColumn(
            "bits/char at {longest}×",
            "bits_at_longest",
            note="the same at {longest} times the training length",
        ),
        CardColumn(
            "memorised",
            "memorisation_growth",
            claim="extrapolation.no_memorisation",
            note="growth of validation minus training bits per character at the training "
            "length after the first pass over the training text",
        ),
        CardColumn(
            "passkey at {passkey_at}N",
            "passkey_accuracy",
            key="{encoding}.{passkey_at}N",
            note="passkey retrieval accuracy at {passkey_at} times the training length",
        ),
    ),
    constants={"t5_train_ratio": T5_TRAIN_RATIO},
)
