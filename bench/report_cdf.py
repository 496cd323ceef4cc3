"""The latency CDF plot of bench/report.py (latency_uneven.png: pull,
round-robin push and the ideal central queue for uneven job durations),
drawn with matplotlib when it is installed, else with a small built-in PNG
writer (lines and axes, no text).
"""

import math
import struct
import zlib

from report_util import read_csv


# -- the plot ------------------------------------------------------------------


def cdf(xs):
    xs = sorted(xs)
    n = len(xs)
    # Thin out to at most ~2000 points per line.
    step = max(1, n // 2000)
    pts = [(xs[i], (i + 1) / n) for i in range(0, n, step)]
    if pts and pts[-1][0] != xs[-1]:
        pts.append((xs[-1], 1.0))
    return pts


SERIES_COLORS = {"pull (pool)": (31, 119, 180),
                 "round-robin push": (214, 39, 40),
                 "ideal central queue": (44, 160, 44)}


def uneven_panels(results):
    """[(title, {label: [latency ms]})] for the plot, target case first."""
    panels = []
    for name, title in [
            ("uneven_raw_bimodal_0.7.csv", "bimodal, load 0.7"),
            ("uneven_raw_exponential_0.7.csv", "exponential, load 0.7"),
            ("uneven_raw_bimodal_0.7_spin.csv",
             "bimodal, load 0.7, polling scheduler")]:
        rows = read_csv(results, name)
        if not rows:
            continue
        series = {"pull (pool)": [], "round-robin push": [],
                  "ideal central queue": []}
        for r in rows:
            lat = float(r["latency_us"]) / 1e3
            if r["variant"] == "pull":
                series["pull (pool)"].append(lat)
                series["ideal central queue"].append(
                    float(r["ideal_us"]) / 1e3)
            else:
                series["round-robin push"].append(lat)
        panels.append((title, series))
    return panels


def plot_matplotlib(panels, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, len(panels), figsize=(5.2 * len(panels), 4.2),
                             squeeze=False)
    for ax, (title, series) in zip(axes[0], panels):
        for label, xs in series.items():
            pts = cdf(xs)
            color = tuple(c / 255 for c in SERIES_COLORS[label])
            ax.plot([p[0] for p in pts], [p[1] for p in pts], label=label,
                    color=color, linewidth=1.6,
                    linestyle="--" if label.startswith("ideal") else "-")
        ax.set_xscale("log")
        ax.set_xlabel("latency, arrival to reply (ms, log scale)")
        ax.set_ylabel("fraction of jobs")
        ax.set_title(title)
        ax.axhline(0.99, color="grey", linewidth=0.6, linestyle=":")
        ax.grid(True, which="both", linewidth=0.3)
        ax.legend(loc="lower right", fontsize=8)
    fig.suptitle("Uneven job durations on 2 dedicated workers: latency CDF "
                 "(all runs)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write_png(path, width, height, pixels):
    raw = b"".join(b"\x00" + bytes(pixels[y * width * 3:(y + 1) * width * 3])
                   for y in range(height))

    def chunk(tag, data):
        body = tag + data
        return (struct.pack(">I", len(data)) + body
                + struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF))

    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n")
        f.write(chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2,
                                           0, 0, 0)))
        f.write(chunk(b"IDAT", zlib.compress(raw, 9)))
        f.write(chunk(b"IEND", b""))


def plot_builtin(panels, path):
    """Log-x CDF panels without text: frame, decade grid, p99 line."""
    pw, ph, margin = 420, 320, 30
    width, height = pw * len(panels), ph
    px = bytearray([255] * (width * height * 3))

    def put(x, y, color):
        if 0 <= x < width and 0 <= y < height:
            i = (y * width + x) * 3
            px[i:i + 3] = bytes(color)

    def line(x0, y0, x1, y1, color):
        dx, dy = abs(x1 - x0), -abs(y1 - y0)
        sx, sy = (1 if x0 < x1 else -1), (1 if y0 < y1 else -1)
        err = dx + dy
        while True:
            put(x0, y0, color)
            put(x0, y0 + 1, color)
            if x0 == x1 and y0 == y1:
                break
            e2 = 2 * err
            if e2 >= dy:
                err += dy
                x0 += sx
            if e2 <= dx:
                err += dx
                y0 += sy

    for k, (_, series) in enumerate(panels):
        allx = [x for xs in series.values() for x in xs if x > 0]
        lo = math.floor(math.log10(min(allx)))
        hi = math.ceil(math.log10(max(allx)))
        left, right = k * pw + margin, (k + 1) * pw - 10
        top, bottom = 10, ph - margin

        def sx(v):
            v = math.log10(max(v, 10 ** lo))
            return int(left + (v - lo) / (hi - lo) * (right - left))

        def sy(f):
            return int(bottom - f * (bottom - top))

        grey = (200, 200, 200)
        for d in range(lo, hi + 1):
            line(sx(10 ** d), top, sx(10 ** d), bottom, grey)
        line(left, sy(0.99), right, sy(0.99), grey)
        for a, b in [((left, top), (right, top)), ((right, top),
                     (right, bottom)), ((right, bottom), (left, bottom)),
                     ((left, bottom), (left, top))]:
            line(*a, *b, (0, 0, 0))
        for label, xs in series.items():
            pts = cdf(xs)
            color = SERIES_COLORS[label]
            for (x0, f0), (x1, f1) in zip(pts, pts[1:]):
                line(sx(x0), sy(f0), sx(x1), sy(f1), color)
    write_png(path, width, height, px)


def plot(panels, path):
    try:
        plot_matplotlib(panels, path)
        return "matplotlib"
    except ImportError:
        plot_builtin(panels, path)
        return "builtin"
