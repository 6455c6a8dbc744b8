"""The tasks section's claims, as data. Ruoss et al.'s results table could not be read from the
sources reachable here (published.yaml says which were tried), so the claims test their stated
findings, each quoted in its statement with the section it comes from; a cell-by-cell agreement
with their table is not claimed. A model that did not learn its task at the training length is
no evidence either way: every claim on trained models requires it (``learned``)."""

from posenc.claims import Check, Claim

LEARNED = Check(
    "learned",
    value=True,
    label="exact match at the training length reaches the learned threshold on a majority of seeds",
)

CLAIMS = (
    Claim(
        "tasks.small_models_learn",
        "On every task, at least the learner share of the configured encodings reach exact "
        "match at the training length on a majority of seeds: with the extrapolation "
        "study's own model ({model_size}), the tasks are learned in distribution, so what "
        "happens past it is about positions.",
        kind="empirical",
        checks=(
            Check(
                "learner_share",
                ">=",
                "min_learner_share",
                label="share of encodings that learned the task",
            ),
        ),
        scope="scope",
        unless="smoke_test",
        references=("deletang2023", "ruoss2023"),
    ),
    Claim(
        "tasks.plain_positions_fail_past_training",
        'Ruoss et al. (abstract): Transformers "fail to generalize to sequences of arbitrary '
        'length, even for seemingly simple tasks such as duplicating a string", a failure '
        'they link to "positional encodings being out-of-distribution for longer sequences '
        '(even for relative encodings)". Here: on each task that needs a specific far '
        "position, every encoding with plain positions that learned it stays below the "
        "generalisation threshold in per-token accuracy over the test lengths.",
        kind="empirical",
        requires=(LEARNED,),
        checks=(
            Check(
                "plain_far_test_accuracy",
                "<",
                "generalises",
                label="per-token accuracy over the test lengths, plain positions",
            ),
        ),
        scope="scope",
        unless="smoke_test",
        references=("ruoss2023",),
    ),
    Claim(
        "tasks.randomized_raises_test_accuracy",
        'Ruoss et al. (abstract): randomized positions "allow Transformers to generalize to '
        'sequences of unseen length (increasing test accuracy by 12.0% on average)". Here: '
        "the per-token accuracy over the test lengths, randomized minus plain, averaged over "
        "every task and randomized encoding where both learned, is above the gain threshold.",
        kind="empirical",
        requires=(
            Check(
                "randomized_cells",
                ">=",
                "min_randomized_cells",
                label="tasks × randomized encodings where both models learned",
            ),
        ),
        checks=(
            Check(
                "randomized_gain",
                ">",
                "randomized_gain_min",
                label="mean gain in per-token test accuracy, randomized − plain",
            ),
        ),
        scope="scope",
        unless="smoke_test",
        references=("ruoss2023",),
    ),
    Claim(
        "tasks.randomized_keeps_in_domain",
        'Ruoss et al. (introduction): "our method leaves in-domain generalization '
        "performance unaffected\". Here: at the training length, no randomized encoding's "
        "exact match is below its plain counterpart's by more than the in-domain margin "
        "(each task where the plain model learned).",
        kind="empirical",
        requires=(LEARNED,),
        checks=(
            Check(
                "in_domain_drop",
                "<=",
                "in_domain_drop_max",
                label="exact match at the training length, plain − randomized",
            ),
        ),
        scope="scope",
        unless="smoke_test",
        references=("ruoss2023",),
    ),
)
