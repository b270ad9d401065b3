"""Pictures of values: a tensor as an SVG or PNG image (docs/pictures.md).

Pure functions from an array and its axes' labels to the bytes of one image,
so the command line, the language server and an editor panel draw the same
picture.  matplotlib is imported on the first picture only (never when
`fuse_lang` is imported), with the headless Agg backend; SVG text stays text
(`svg.fonttype = 'none'`), so index and symbol names can be selected and
searched.

What each shape becomes: a scalar a number; 1-D a bar chart (a line past
`BAR_LIMIT` values); 2-D a heatmap, rows down the first axis; 3-D and more a
grid of 2-D heatmaps, one per position of the slicing axis.  A Boolean
relation over one set of symbols can also be drawn as a graph
(`relation_graph`).  An axis longer than `MAX_CELLS` is summarised in blocks
(the mean of each block; its max for a Boolean tensor, so a true cell stays
visible) and the picture says so.
"""
from __future__ import annotations

import io
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterator, Sequence

import numpy as np

if TYPE_CHECKING:
    from ..check import Analysis

FORMATS = ("svg", "png")
MAX_CELLS = 256  # per axis of a heatmap; longer axes are summarised in blocks
MAX_SPARSE_PICTURE_CELLS = 1 << 26  # a sparse value is drawn dense up to 64M cells (256 MB)
MAX_POINTS = 2048  # of a 1-D chart
BAR_LIMIT = 64  # 1-D up to this many values as bars, longer as a line
MAX_SLICES = 16  # heatmaps in the grid of a 3-D+ tensor
MAX_TICK_LABELS = 64  # symbol names on an axis; longer axes show positions
MAX_GRAPH_NODES = 60  # a relation with more symbols is not drawn as a graph
CHUNK_ELEMENTS = 1 << 20  # values summarised at a time (a band of whole blocks)
LARGEST_DRAWN = 1e300  # float64 values beyond are drawn in units of a power of ten


@dataclass(frozen=True)
class AxisLabel:
    """What an axis is called: its index name and, over symbols, their names."""

    index: str
    symbols: tuple[str, ...] | None = None


def axis_labels(analysis: Analysis, name: str) -> tuple[AxisLabel, ...]:
    """The labels of the stored axes of tensor `name` (empty when it is unknown)."""
    tensor = analysis.tensors.get(name)
    if tensor is None:
        return ()
    labels = []
    for axis in tensor.axes:
        if not axis.virtual:
            values = analysis.domain_symbols.get(axis.domain)
            labels.append(AxisLabel(axis.index, tuple(map(str, values)) if values else None))
    return tuple(labels)


def is_relation_graph(analysis: Analysis, name: str) -> bool:
    """A Boolean tensor over two axes of the same symbols: drawable as a graph."""
    tensor = analysis.tensors.get(name)
    if tensor is None or not tensor.boolean:
        return False
    axes = [a for a in tensor.axes if not a.virtual]
    return (len(axes) == 2 and axes[0].domain == axes[1].domain
            and bool(analysis.domain_symbols.get(axes[0].domain)))


class PictureError(ValueError):
    """A value that cannot be drawn as asked (the message says why)."""


def render_array(array: Any, name: str, labels: Sequence[AxisLabel] = (), fmt: str = "svg",
                 boolean: bool = False, slice_axis: str | int | None = None,
                 dpi: int = 100, max_cells: int = MAX_CELLS) -> bytes:
    """The picture of one value as SVG or PNG bytes (`dpi`: a PNG's pixels per inch;
    `max_cells`: per axis of a heatmap, before it is summarised)."""
    if fmt not in FORMATS:
        raise PictureError(f"unknown picture format {fmt!r} (svg or png)")
    data = dense_for_picture(array, name)
    if data.dtype == bool:
        boolean = True
    if data.dtype.kind not in "biuf":
        raise PictureError(f"{name} holds {data.dtype} values, not real numbers")
    # float32 and float64 are drawn as they are: a copy of a huge tensor (in float64, twice
    # a float32's bytes) would cost more than the picture, which summarises it in chunks
    if data.dtype.kind != "f" or data.dtype.itemsize < 4:
        small = data.dtype.kind == "b" or data.dtype.itemsize <= 2
        data = data.astype(np.float32 if small else np.float64)
    labels = _full_labels(labels, data.ndim)
    data, unit = _in_drawable_units(data)
    if data.size == 0:
        fig = _scalar_figure(data, name, f"{name} {_shape_text(data.shape)} (empty)")
    elif data.ndim == 0:
        fig = _scalar_figure(data, name)
    elif data.ndim == 1:
        fig = _line_figure(data, name, labels[0], boolean, unit)
    elif data.ndim == 2:
        fig = new_figure(_heatmap_size(data.shape, max_cells))
        ax = fig.subplots()
        notes = _heatmap(fig, ax, data, labels, boolean, None, max_cells)
        _title(ax, f"{name}  {_shape_text(data.shape)}", unit + notes)
    else:
        fig = _slices_figure(data, name, labels, boolean, _axis_number(slice_axis, labels),
                             max_cells, unit)
    return figure_bytes(fig, fmt, dpi)


def dense_for_picture(array: Any, name: str) -> np.ndarray:
    """The array to draw; a scipy.sparse value (a matrix, or a coo_array of a relation
    of three or more axes) made dense (a picture summarises every cell), refused when
    that would be larger than MAX_SPARSE_PICTURE_CELLS."""
    if not hasattr(array, "tocoo"):
        return np.asarray(array)
    if math.prod(array.shape) > MAX_SPARSE_PICTURE_CELLS:
        kind = "matrix" if len(array.shape) == 2 else "tensor"
        raise PictureError(f"{name} is a sparse {' x '.join(map(str, array.shape))} {kind}, "
                           f"too large to draw")
    return array.toarray()


def relation_graph(array: Any, name: str, symbols: Sequence[str], fmt: str = "svg") -> bytes:
    """A Boolean relation R(x,y) over one set of symbols as a graph: the symbols
    on a circle, an arrow x -> y for each true R(x,y), a loop for R(x,x)."""
    if fmt not in FORMATS:
        raise PictureError(f"unknown picture format {fmt!r} (svg or png)")
    if len(np.shape(array)) != 2 or np.shape(array)[0] != np.shape(array)[1]:
        raise PictureError(f"{name} is not a relation over one set of symbols")
    n = np.shape(array)[0]
    if n > MAX_GRAPH_NODES:
        raise PictureError(f"{name} relates {n} symbols; a graph is drawn up to "
                           f"{MAX_GRAPH_NODES}")
    data = dense_for_picture(array, name)
    from matplotlib.patches import Circle

    fig = new_figure((6, 6))
    ax = fig.subplots()
    angles = [math.pi / 2 - 2 * math.pi * k / max(n, 1) for k in range(n)]
    points = [(math.cos(a), math.sin(a)) for a in angles]
    for (i, j) in zip(*np.nonzero(data > 0)):
        i, j = int(i), int(j)
        if i == j:
            x, y = points[i]
            ax.add_patch(Circle((x * 1.12, y * 1.12), 0.1, fill=False, color="0.45"))
            continue
        ax.annotate("", xy=points[j], xytext=points[i],
                    arrowprops=dict(arrowstyle="-|>", color="0.35", shrinkA=14, shrinkB=14,
                                    connectionstyle="arc3,rad=0.08"))
    for k, (x, y) in enumerate(points):
        label = str(symbols[k]) if k < len(symbols) else str(k)
        ax.text(x, y, label, ha="center", va="center", fontsize=9,
                bbox=dict(boxstyle="round,pad=0.3", fc="#dbe9f6", ec="#4a7fb0"))
    ax.set_xlim(-1.35, 1.35)
    ax.set_ylim(-1.35, 1.35)
    ax.set_aspect("equal")
    ax.axis("off")
    edges = int(np.count_nonzero(data > 0))
    ax.set_title(f"{name}: {n} symbols, {edges} pairs", fontsize=11)
    return figure_bytes(fig, fmt)


# ------------------------------------------------------------------ the shapes


def _scalar_figure(data: np.ndarray, name: str, empty: str | None = None):
    """A scalar as its number; an empty tensor as a line saying so."""
    fig = new_figure((3, 1.4))
    fig.text(0.5, 0.62, "no values" if empty else f"{float(data):.6g}", ha="center",
             va="center", fontsize=22)
    fig.text(0.5, 0.2, empty or f"{name} (a scalar)", ha="center", va="center", fontsize=10,
             color="0.3")
    return fig


def _line_figure(data: np.ndarray, name: str, label: AxisLabel, boolean: bool,
                 unit: Sequence[str] = ()):
    shown, block = _blocks_1d(data, boolean)
    # inf and NaN left blank; drawn in float64 (a float32 extreme's range overflows float32)
    shown = np.where(np.isfinite(shown), shown.astype(np.float64), np.nan)
    fig = new_figure((min(10, 3 + 0.12 * min(len(shown), BAR_LIMIT)), 3.2))
    ax = fig.subplots()
    positions = np.arange(len(shown)) * block
    if len(shown) <= BAR_LIMIT:
        ax.bar(positions, shown, width=0.8 * block, color="#3b75af")
    else:
        ax.plot(positions, shown, color="#3b75af", linewidth=1)
    _ticks(ax.set_xticks, ax.set_xticklabels, label, len(data), block, rotate=True)
    ax.set_xlabel(label.index)
    ax.set_ylabel("true" if boolean else "value")
    notes = list(unit)
    if block > 1:
        notes.append(f"summarised: {len(data)} values shown as {len(shown)} "
                     f"block {'maxima' if boolean else 'means'} of {block}")
    notes += _nonfinite_note(data)
    _title(ax, f"{name}  {_shape_text(data.shape)}", notes)
    return fig


def _heatmap(fig, ax, data: np.ndarray, labels: Sequence[AxisLabel], boolean: bool,
             scale: tuple[float, float] | None = None, max_cells: int = MAX_CELLS,
             count_nonfinite: bool = True) -> list[str]:
    """Draw one 2-D heatmap on `ax` (colours from `scale`, else its own range);
    the notes to show with it (its values not finite counted unless a grid of
    slices counts them over the whole tensor)."""
    shown, blocks = _blocks_2d(data, boolean, max_cells)
    # drawn in float64: matplotlib's colour scale of a float32 extreme overflows float32
    finite = np.where(np.isfinite(shown), shown.astype(np.float64), np.nan)
    if boolean:
        image = ax.imshow(finite, cmap="Greys", vmin=0, vmax=1, interpolation="nearest",
                          aspect="auto")
    else:
        low, high = scale or (None, None)
        image = ax.imshow(finite, cmap="viridis", vmin=low, vmax=high,
                          interpolation="nearest", aspect="auto")
        fig.colorbar(image, ax=ax, fraction=0.046, pad=0.04)
    _ticks(ax.set_yticks, ax.set_yticklabels, labels[0], data.shape[0], blocks[0])
    _ticks(ax.set_xticks, ax.set_xticklabels, labels[1], data.shape[1], blocks[1], rotate=True)
    ax.set_ylabel(labels[0].index)
    ax.set_xlabel(labels[1].index)
    notes = []
    if blocks != (1, 1):
        notes.append(f"summarised: {_shape_text(data.shape)} shown as {_shape_text(shown.shape)} "
                     f"block {'maxima' if boolean else 'means'} of "
                     f"{blocks[0]}x{blocks[1]}")
    return notes + (_nonfinite_note(data) if count_nonfinite else [])


def _slices_figure(data: np.ndarray, name: str, labels: Sequence[AxisLabel],
                   boolean: bool, along: int, max_cells: int = MAX_CELLS,
                   unit: Sequence[str] = ()):
    moved = np.moveaxis(data, along, 0)
    rest = [labels[k] for k in range(data.ndim) if k != along]
    # a 4-D+ tensor: the axes after the slicing one and before the last two are
    # flattened into the slices too, each slice titled with every position (each
    # slice a view: the tensor is never copied whole)
    outer = moved.shape[:-2]
    total = math.prod(outer)
    count = min(total, MAX_SLICES)
    slices = [moved[np.unravel_index(k, outer)] for k in range(count)]
    cols = min(4, count)
    rows = math.ceil(count / cols)
    fig = new_figure((3.4 * cols, 3.0 * rows + 0.6))
    axes = fig.subplots(rows, cols, squeeze=False)
    names = [labels[along]] + rest[:-2]
    notes: list[str] = []
    scale = _finite_range(data)
    for k in range(rows * cols):
        ax = axes[k // cols][k % cols]
        if k >= count:
            ax.axis("off")
            continue
        where = np.unravel_index(k, outer)
        notes = _heatmap(fig, ax, slices[k], rest[-2:], boolean, scale, max_cells,
                         count_nonfinite=False)
        ax.set_title(", ".join(_position_text(lab, int(p)) for lab, p in zip(names, where)),
                     fontsize=9)
    head = [f"slices along {labels[along].index}"]
    if total > count:
        head.append(f"summarised: the first {count} of {total} slices")
    # the values not finite counted over the whole tensor, not over one slice
    notes = list(unit) + notes + _nonfinite_note(data)
    fig.suptitle("\n".join([f"{name}  {_shape_text(data.shape)}"] + head + notes), fontsize=10)
    return fig


# ------------------------------------------------------------------ summaries


def _blocks_1d(data: np.ndarray, boolean: bool) -> tuple[np.ndarray, int]:
    block = max(1, math.ceil(len(data) / MAX_POINTS))
    return _reduce_blocks(data, (block,), boolean), block


def _blocks_2d(data: np.ndarray, boolean: bool, max_cells: int = MAX_CELLS
               ) -> tuple[np.ndarray, tuple[int, int]]:
    blocks = tuple(max(1, math.ceil(n / max_cells)) for n in data.shape)
    return _reduce_blocks(data, blocks, boolean), blocks  # type: ignore[return-value]


def _reduce_blocks(data: np.ndarray, blocks: tuple[int, ...], boolean: bool) -> np.ndarray:
    """Block means (maxima for a Boolean tensor) over blocks of the given sizes;
    the last block of an axis may be shorter (its padding is left out).  Reduced a
    band of whole blocks along the first axis at a time, so what it allocates is
    about CHUNK_ELEMENTS, not the tensor's size again (in float64, and padded)."""
    if all(b == 1 for b in blocks):
        return data
    row = math.prod(data.shape[1:])
    step = blocks[0] * max(1, CHUNK_ELEMENTS // max(1, blocks[0] * row))
    return np.concatenate([_reduce_band(data[start:start + step], blocks, boolean)
                           for start in range(0, data.shape[0], step)])


def _reduce_band(data: np.ndarray, blocks: tuple[int, ...], boolean: bool) -> np.ndarray:
    padded_shape = [math.ceil(n / b) * b for n, b in zip(data.shape, blocks)]
    padded = np.full(padded_shape, np.nan)
    padded[tuple(slice(0, n) for n in data.shape)] = data
    split: list[int] = []
    for n, b in zip(padded_shape, blocks):
        split += [n // b, b]
    grouped = padded.reshape(split)
    inner = tuple(range(1, 2 * len(blocks), 2))
    with np.errstate(all="ignore"):
        reduced = np.nanmax(grouped, axis=inner) if boolean else np.nanmean(grouped, axis=inner)
    return reduced


# ------------------------------------------------------------------ labels


def _full_labels(labels: Sequence[AxisLabel], ndim: int) -> list[AxisLabel]:
    """One label per axis; an axis without an index name is called `axis K`."""
    out = list(labels)[:ndim]
    out += [AxisLabel("") for _ in range(ndim - len(out))]
    return [lab if lab.index else AxisLabel(f"axis {k}", lab.symbols)
            for k, lab in enumerate(out)]


def _axis_number(axis: str | int | None, labels: Sequence[AxisLabel]) -> int:
    if axis is None:
        return 0
    if isinstance(axis, int):
        if not 0 <= axis < len(labels):
            raise PictureError(f"no axis {axis}: the tensor has {len(labels)}")
        return axis
    names = [lab.index for lab in labels]
    if axis in names:
        return names.index(axis)
    raise PictureError(f"no index {axis!r} to slice along (the axes are "
                       f"{', '.join(n or '?' for n in names)})")


def _position_text(label: AxisLabel, p: int) -> str:
    if label.symbols and p < len(label.symbols):
        return f"{label.index}={label.symbols[p]}"
    return f"{label.index}={p}"


def _ticks(set_ticks, set_labels, label: AxisLabel, extent: int, block: int,
           rotate: bool = False) -> None:
    """Symbol names as tick labels where they fit; otherwise matplotlib's own
    positions, scaled back from blocks to the tensor's positions."""
    if label.symbols and extent <= MAX_TICK_LABELS and block == 1:
        set_ticks(range(extent))
        names = [str(s) for s in label.symbols[:extent]]
        names += [str(k) for k in range(len(names), extent)]
        # rotated names on x end at their tick, names on y end beside theirs
        set_labels(names, rotation=60 if rotate else 0, fontsize=8, ha="right")
    elif block > 1:
        shown = math.ceil(extent / block)
        step = max(1, shown // 8)
        positions = list(range(0, shown, step))
        set_ticks(positions)
        set_labels([str(p * block) for p in positions], fontsize=8)
    elif extent <= 20:
        set_ticks(range(extent))


def _shape_text(shape: Sequence[int]) -> str:
    return "x".join(str(n) for n in shape) if shape else "scalar"


def _bands(data: np.ndarray) -> Iterator[np.ndarray]:
    """`data` in bands along its first axis of about CHUNK_ELEMENTS each (a 0-D or
    1-D array in one), so a pass over a huge tensor allocates a band's worth."""
    if data.ndim == 0:
        yield data
        return
    step = max(1, CHUNK_ELEMENTS // max(1, math.prod(data.shape[1:])))
    for start in range(0, data.shape[0], step):
        yield data[start:start + step]


def _finite_range(data: np.ndarray) -> tuple[float, float] | None:
    """The least and greatest finite value (None: there is none)."""
    low, high = math.inf, -math.inf
    for band in _bands(data):
        finite = np.isfinite(band)
        if finite.any():
            low = min(low, float(np.min(band, where=finite, initial=math.inf)))
            high = max(high, float(np.max(band, where=finite, initial=-math.inf)))
    return (low, high) if low <= high else None


def _in_drawable_units(data: np.ndarray) -> tuple[np.ndarray, list[str]]:
    """`data` as it can be drawn, and the note that says how: float64 values past
    LARGEST_DRAWN (whose range, 1e308 - -1e308, overflows matplotlib's colour and
    axis scales) divided by a power of ten, said on the picture; others as they are."""
    if data.dtype != np.float64 or data.ndim == 0 or data.size == 0:
        return data, []
    bounds = _finite_range(data)
    biggest = max(abs(bounds[0]), abs(bounds[1])) if bounds is not None else 0.0
    if biggest <= LARGEST_DRAWN:
        return data, []
    unit = 10.0 ** math.floor(math.log10(biggest))
    return data / unit, [f"values in units of {unit:g}"]


def _nonfinite_note(data: np.ndarray) -> list[str]:
    bad = sum(int(band.size - np.count_nonzero(np.isfinite(band))) for band in _bands(data))
    return [f"{bad} value{'' if bad == 1 else 's'} not finite (left blank)"] if bad else []


def _title(ax, head: str, notes: Sequence[str]) -> None:
    ax.set_title("\n".join([head, *notes]), fontsize=10)


def _heatmap_size(shape: Sequence[int], max_cells: int = MAX_CELLS) -> tuple[float, float]:
    rows, cols = (min(n, max_cells) for n in shape)
    width = min(11.0, max(4.5, 2.5 + 0.28 * cols))
    height = min(9.0, max(3.5, 1.8 + 0.28 * rows))
    return width, height


# ------------------------------------------------------------------ matplotlib


def new_figure(size: tuple[float, float]):
    """A matplotlib figure drawn by the headless Agg canvas, text kept as text in
    SVG (and never read as mathtext: figure_bytes).  No pyplot: no global figure
    registry, so threads may draw at once."""
    import matplotlib

    matplotlib.rcParams["svg.fonttype"] = "none"
    matplotlib.rcParams["svg.hashsalt"] = "fuse"  # the same picture gives the same bytes
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=size, dpi=100)
    FigureCanvasAgg(fig)
    return fig


def figure_bytes(fig, fmt: str, dpi: int = 100) -> bytes:
    from matplotlib.text import Text

    # a symbol, a string constant or a file name is text, never TeX: `"$x$"` stays
    # `$x$`, and `"$\\frac$"` is no mathtext parse error (set on each text, not in
    # rcParams: a notebook's own figures keep their mathtext)
    for text in fig.findobj(Text):
        text.set_parse_math(False)
    buffer = io.BytesIO()
    fig.tight_layout()
    metadata = {"Date": None} if fmt == "svg" else {"Software": None}
    fig.savefig(buffer, format=fmt, dpi=dpi, metadata=metadata)
    return buffer.getvalue()
