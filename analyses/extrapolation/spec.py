"""Train short, test long: a character LM and a passkey-retrieval model per encoding and seed,
trained at one length and evaluated at multiples of it. Torch-free: read by the workflow at
parse time. The training and evaluation stages are in ``rules.smk``; this spec is the
aggregate, which reads every model's evaluation and training log."""

from pathlib import Path

from posenc import paths, variants
from posenc.analyses.extrapolation.claims import CLAIMS
from posenc.analyses.extrapolation.preconditions import FIRE_JUDGED_AT, T5_TRAIN_RATIO
from posenc.analysis import AnalysisSpec, CardColumn, Figure, Resources, Table
from posenc.corpora import corpus_file
from posenc.model_config import UNSCALED_EMBEDDING_STD

TASKS = ("lm", "passkey")


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
    # The extension section's zero-shot stretch of every LM seed, where it runs log-n scaling:
    # log-n's gain is judged there (its windows), not on the attention readout's few.
    if "logn" in ((config.get("extension") or {}).get("stretch") or {}).get("temperatures", []):
        files["stretch"] = [
            paths.EXT_STRETCH.format(encoding=e, seed=s)
            for e in variants.stretched_lms(config)
            for s in config["extrapolation"]["lm"]["seeds"]
        ]
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
    readout = cfg["lm"]["eval"].get("mechanism")
    longest = max(cfg["lm"]["eval"]["multipliers"]) * seq_len
    if readout and readout["tokens"] % longest:
        problems.append(
            f"config key extrapolation.lm.eval.mechanism.tokens = {readout['tokens']}: must be a "
            f"multiple of the longest evaluation length, {longest} (whole windows at every length)"
        )
    unread = readout and sorted(set(readout["seeds"]) - set(cfg["lm"]["seeds"]))
    if unread:
        problems.append(
            f"config key extrapolation.lm.eval.mechanism.seeds = {readout['seeds']}: "
            f"{', '.join(map(str, unread))} not in extrapolation.lm.seeds = {cfg['lm']['seeds']} "
            "(no LM of that seed is trained, so none would be read out)"
        )
    segment = cfg["lm"]["eval"]["segment"]
    if segment > seq_len:
        problems.append(
            f"config key extrapolation.lm.eval.segment = {segment}: must be <= "
            f"extrapolation.lm.seq_len = {seq_len} (the scored segment fits the shortest window)"
        )
    problems += _context_problems(cfg)
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


def _context_problems(cfg: dict) -> list[str]:
    """The effective context's lengths: none longer than L_train (a truncation of the context
    the model was trained on), and L_train itself among them (the full context each shorter one
    is compared with)."""
    context = cfg["lm"]["eval"].get("context")
    if not context:
        return []
    lengths, seq_len = context["lengths"], cfg["lm"]["seq_len"]
    key = f"config key extrapolation.lm.eval.context.lengths = {lengths}"
    longer = [k for k in lengths if k > seq_len]
    if longer:
        return [
            f"{key}: {', '.join(map(str, longer))} longer than extrapolation.lm.seq_len = "
            f"{seq_len} (each length truncates the context the model was trained on)"
        ]
    if seq_len not in lengths:
        return [
            f"{key}: must include extrapolation.lm.seq_len = {seq_len} (the full context every "
            "shorter one is compared with)"
        ]
    return []


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
    """Randomized positions need an encoding that takes positions (the registry says which);
    an encoding's attention window must bind within L_train."""
    randomized = (config.get("extrapolation") or {}).get("randomized_positions") or {}
    problems = []
    for task, names in (randomized.get("encodings") or {}).items():
        blind = [e for e in names if encodings.get(e, {}).get("acts_on") == "none"]
        if blind:
            problems.append(
                f"config key extrapolation.randomized_positions.encodings.{task} = {names}: "
                f"{', '.join(blind)} takes no positions, so randomizing them changes nothing"
            )
    # A windowed layer whose window covers L_train is full attention in training: the window
    # would first bind past L_train, where no model has learned to live with it.
    cfg = config.get("extrapolation")
    seq_len = cfg["lm"]["seq_len"] if cfg else None
    for name in config.get("encodings", []) if seq_len else []:
        meta = encodings.get(name, {})
        if not meta.get("windowed"):
            continue
        declared = meta.get("params", {}).get("properties", {}).get("window", {})
        window = (config.get("encoding", {}).get(name) or {}).get("window", declared.get("default"))
        if window is not None and window >= seq_len:
            problems.append(
                f"config key encoding.{name}.window = {window}: must be below "
                f"extrapolation.lm.seq_len = {seq_len} (a window at or above L_train is full "
                "attention throughout training)"
            )
    return problems


def encoding_shapes(config: dict) -> dict[str, tuple[int, int]]:
    """The trained models' width (both tasks; the similarity section reads them too)."""
    model = config["extrapolation"]["model"]
    d, h = model["d_model"], model["n_heads"]
    return {f"extrapolation.model.d_model = {d}, extrapolation.model.n_heads = {h}": (d, h)}


SPEC = AnalysisSpec(
    id="extrapolation",
    title="Extrapolation: train short, test long",
    csvs=("lm_bits", "passkey_accuracy", "training_timing", "mechanism", "context_bits"),
    inputs=inputs,
    figures={
        "bits_vs_length": Figure(
            "Validation loss versus evaluation length for models trained at L_train = "
            "{train_len} (dashed grey line), up to {longest}x L_train, in both scoring modes; "
            "line: mean over seeds, band: its {interval_percent}% interval (Student-t over "
            "seeds and fragments of text). The learned table has no value past L_train "
            "(undefined). The +PI and +NTK curves are a model evaluated with Position "
            "Interpolation and NTK-aware scaling, without fine-tuning: same colour as RoPE, "
            "each with its own line style and hollow marker. Grey horizontal lines: reference "
            "bits/char of the validation text, uniform "
            "(log2 V, V = {vocab_size} characters), and unigram and bigram models estimated "
            "on the training text with add-one (Laplace) smoothing."
        ),
        "effective_context": Figure(
            "How much of its context each LM uses: validation bits/char on the same "
            "{cfg[lm][eval][context][targets]} characters, each predicted from exactly k "
            "characters before it (read at positions 0..k-1), against k; line: mean over "
            "seeds, band: its {interval_percent}% interval (Student-t over seeds and fragments "
            "of text). Each encoding's label gives its effective context: the shortest k whose "
            "rise over the full context ({cfg[lm][seq_len]}) is at most "
            "{cfg[thresholds][effective_context_margin_bits]:g} bits/char over its whole "
            "interval. Grey horizontal lines: the interpolated Kneser-Ney 4- and 5-gram of the "
            "training text on the same characters, each reading the n - 1 characters before "
            "its target."
        ),
        "passkey_accuracy": Figure(
            "Passkey retrieval: exact-match accuracy (every token of the key right) versus "
            "sequence length for models trained on lengths up to N = {passkey_train_len} "
            "(dashed grey line); dotted: chance, a uniform guess of the whole key. "
            "Line: mean over seeds; band: its {interval_percent}% interval (Student-t over "
            "seeds and test sequences). "
            "Each encoding's points are shifted slightly sideways, so that series with equal "
            "accuracies (at 1.0, say) do not hide one another."
        ),
        "training_curves": Figure(
            "Training curves (moving average, mean over seeds). Character LM: grey horizontal "
            "lines mark the reference bits/char of the validation text, uniform (log2 V), and "
            "unigram and bigram models estimated on the training text with add-one (Laplace) "
            "smoothing.",
            placement="appendix",
        ),
        "mechanism": Figure(
            "The attention against the loss past L_train, at the longest length: each "
            "encoding's rise in bits/char from 1x (mode a; read-out seeds {mechanism_seeds}, "
            "{mechanism_windows} windows per seed at the longest length and "
            "{mechanism_windows_1x} at 1x) against the rise of its attention's raw entropy in "
            "nats over the keys each query sees (attention dilution; dashed: the rise uniform "
            "attention would have over the same queries, the mean of ln n), and against the "
            "share of attention on keys farther than any distance training showed (unseen "
            "relative positions); mean over layers, bars: {interval_percent}% intervals over "
            "seeds and fragments of text. Hollow: LMs that did not learn, left out of the rank "
            "correlation in each title, whose p-value is a one-sided permutation test over the "
            "encodings.",
            placement="appendix",
        ),
        "wavelengths": Figure(
            "The trained LMs' waves at their wavelengths, 2 pi / omega positions per turn (a "
            "rotary encoding's pairs, a sinusoidal table's sine-cosine pairs), fastest first "
            "(a pair that does not turn at the top, marked still), against "
            "L_train = {train_len} and the longest length evaluated. A pair slower than "
            "L_train has turned through part of a circle only in training, so past L_train it "
            "meets angles training never showed; a pair faster has shown every angle it will "
            "take. A comparison of rotary variants past L_train tests something only where "
            "both meet such angles.",
            placement="appendix",
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
            placement="appendix",
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
            placement="appendix",
        ),
        "learned": Table(
            "Which trained models learned their task, the precondition of every claim on "
            "them. Language models: validation bits/char at L_train (mode a) against the "
            "interpolated Kneser-Ney trigram of the training text (learned: below it), whether "
            "it is below the 4-gram too (the training recipe's aim for every encoding but "
            "NoPE), and how much the training loss fell over the last tenth of the steps "
            "(plateaued: under {plateau_bits:g} bits/char). Passkey: the seeds whose exact "
            "match at N is at least {passkey_learned_at:g}, of all seeds.",
            placement="appendix",
        ),
        "extensions": Table(
            "Context extensions evaluated without fine-tuning: how much each lowers the plain "
            "model's bits/char (mode b) at every length past L_train [{interval_percent}% "
            "interval]; positive is better.",
            csv="lm_bits",
            placement="appendix",
        ),
        "effective_context": Table(
            "Effective context: per encoding, how much the validation bits/char on the same "
            "{cfg[lm][eval][context][targets]} characters rise when each is predicted from "
            "only k characters before it rather than {cfg[lm][seq_len]} (paired, mean over "
            "seeds [{interval_percent}% interval]), the bits/char at k = {cfg[lm][seq_len]}, "
            "the effective context (the shortest k whose whole interval of rise is at most "
            "{cfg[thresholds][effective_context_margin_bits]:g} bits/char), and the "
            "full-context bits/char minus the interpolated Kneser-Ney 4- and 5-gram's on the "
            "same characters (negative: below it); last, the n-grams themselves. The "
            "bits/char at every k are in the CSV.",
            csv="context_bits",
            placement="appendix",
        ),
        "gap": Table(
            "Train/validation gap at L_train (bits/char, mode a): mean over seeds "
            "[{interval_percent}% interval] and each seed's gap.",
            csv="lm_bits",
            placement="appendix",
        ),
        "training": Table(
            "Training runs: device, throughput, wall time, peak memory (timings).",
            csv="training_timing",
            placement="appendix",
        ),
        "mechanism": Table(
            "The attention read out of the LMs (seeds {mechanism_seeds}) at 1x and the "
            "longest length, mode (a) windows ({mechanism_windows} per seed at the longest, "
            "{mechanism_windows_1x} at 1x): bits/char and its rise from 1x, the raw entropy of "
            "each query's attention in nats and its rise from 1x beside the rise uniform "
            "attention would have over the same queries (the mean of ln n), the entropy "
            "divided by ln n (1: uniform over the keys it sees), and the share of attention on "
            "keys at distance >= L_train; mean over layers (each layer in the CSV) "
            "[{interval_percent}% interval over seeds and fragments of text], without query "
            "scaling and with log-n scaling at the longest (q x log_L_train(n) past L_train).",
            csv="mechanism",
            placement="appendix",
        ),
    },
    # The training runs' speed and memory differ between identical runs: timing.json.
    timing_tables=("training",),
    claims=CLAIMS,
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
            claim="extrapolation.memorisation_below_capacity_share",
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
    constants={
        "t5_train_ratio": T5_TRAIN_RATIO,
        "unscaled_embedding_std": UNSCALED_EMBEDDING_STD,
    },
)
