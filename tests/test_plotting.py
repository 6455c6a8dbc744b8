"""The figures' shared look (posenc.plotting): the analyses' own intervals drawn as they are."""

import matplotlib

from posenc.plotting import estimate_band

matplotlib.use("Agg")


def test_a_band_is_the_interval_the_analysis_gave():
    import matplotlib.pyplot as plt

    cells = [
        {"estimate": 2.0, "low": 1.5, "high": 2.75},
        {"estimate": 3.0, "low": 2.875, "high": 3.5},
        {"estimate": 2.5, "low": 0.25, "high": 4.0},  # not symmetric: no interval recomputed
    ]
    xs = [64, 128, 256]
    fig, ax = plt.subplots()
    estimate_band(ax, xs, cells, "tab:green", label="rope")
    [line] = ax.get_lines()
    assert list(line.get_ydata()) == [c["estimate"] for c in cells]
    [band] = ax.collections
    vertices = band.get_paths()[0].vertices
    for x, c in zip(xs, cells):
        assert {y for vx, y in vertices if vx == x} == {c["low"], c["high"]}
    plt.close(fig)
