"""What the extrapolation section's claims require of the models they read (their
preconditions), and the numbers the literature fixes for them."""

from posenc.claims import Check

# Press et al. (2022) train T5's bias at L_train >= 4x its maximum distance (extrapolation.t5_mild
# follows them): the LM's L_train must be at least this multiple of encoding.t5_bias.max_distance.
T5_TRAIN_RATIO = 4
# Li et al. (2024) train FIRE at 2048 and evaluate up to 8192: extrapolation.fire_best_long is
# judged at this multiple of L_train, theirs, and shows the other lengths beside it.
FIRE_JUDGED_AT = 4
# An LM is alive at a length when its whole bits/char interval there, and at every shorter
# length past L_train, lies below this rung of the n-gram ladder (posenc.ngram.LADDER); it has
# collapsed otherwise. A model no better than character frequencies alone is "beaten" by any
# encoding that is, so a comparison with it can hardly fail; and an interval that straddles the
# rung (three seeds each worse than it can) is no better evidence of life. A comparison claim
# is judged where its comparator is alive.
COLLAPSE_REFERENCE = "unigram"
# What a language model can store: about 2 bits per parameter at most, measured over many
# architectures and sizes after 1000 exposures to each fact (Allen-Zhu and Li 2024, "Physics of
# Language Models: Part 3.3"; 1 bit at 100 exposures). Spent wholly on its training text, it
# would lower the training loss below the validation loss by at most this x parameters /
# training characters bits per character: the memorisation claim's threshold is a share of that.
CAPACITY_BITS_PER_PARAMETER = 2.0


# Preconditions (posenc.claims.Claim.requires): an LM claim reads models that beat a trigram
# (bits/char below the interpolated trigram at L_train), a passkey claim encodings with enough
# seeds that learned it at N, a comparison a comparator that has not collapsed everywhere past
# L_train. Any not met: the entries it bears on are not judged, with the numbers.
BEATS_TRIGRAM = Check(
    "lm_learned_margin",
    ">",
    "lm_learned_margin_bits",
    label="beats the interpolated trigram at L_train (bits/char below it)",
)


def beats_trigram(*encodings: str) -> tuple[Check, ...]:
    """The LMs of ``encodings`` beat a trigram: each below the interpolated trigram at
    L_train (all a model no better than it shows is that it uses two characters of context)."""
    return tuple(
        Check(
            f"lm_learned_margin.{e}",
            ">",
            "lm_learned_margin_bits",
            label=f"{e} beats the interpolated trigram at L_train (bits/char below it)",
        )
        for e in encodings
    )


def not_collapsed(encoding: str) -> Check:
    """``encoding``'s LMs are alive at some length past L_train: there and at every shorter
    length their bits/char interval is wholly below the unigram's (:data:`COLLAPSE_REFERENCE`)."""
    return Check(
        f"alive_past_train.{encoding}",
        value=True,
        label=f"{encoding} alive at some length past L_train (its bits/char interval wholly "
        f"below the {COLLAPSE_REFERENCE}'s there and at every shorter length)",
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
