"""What the extrapolation section's claims require of the models they read (their
preconditions), and the two ratios the literature fixes for them."""

from posenc.claims import Check

# Press et al. (2022) train T5's bias at L_train >= 4x its maximum distance (extrapolation.t5_mild
# follows them): the LM's L_train must be at least this multiple of encoding.t5_bias.max_distance.
T5_TRAIN_RATIO = 4
# Li et al. (2024) train FIRE at 2048 and evaluate up to 8192: extrapolation.fire_best_long is
# judged at this multiple of L_train, theirs, and shows the other lengths beside it.
FIRE_JUDGED_AT = 4


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
