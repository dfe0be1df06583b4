import os
import tracemalloc

import pytest

from curation.core.parallel import LocalMap
from curation.core.records import Fate, Kind
from curation.index import index
from curation.index.index import to_lesions
from curation.index.voc import MAX_BOXES_PER_FILM, AnnotationError, RawBox, parse_voc
from tests.hostile_films import (
    film_bytes,
    voc,
    write_source,
)

VOC = """<annotation><filename>scan.jpg</filename>
<size><width>2400</width><height>1280</height><depth>3</depth></size>
{objects}</annotation>"""
OBJ = (
    "<object><name>{g}</name><bndbox><xmin>{a}</xmin><ymin>{b}</ymin>"
    "<xmax>{c}</xmax><ymax>{d}</ymax></bndbox></object>"
)


def _voc(tmp_path, *objects: tuple) -> object:
    path = tmp_path / "00011.xml"
    path.write_text(
        VOC.format(
            objects="".join(OBJ.format(g=g, a=a, b=b, c=c, d=d) for g, a, b, c, d in objects)
        )
    )
    return path


def test_reversed_corners_are_swapped_and_boxes_clipped_to_the_true_size(tmp_path):
    boxes = parse_voc(_voc(tmp_path, ("4", 900, 100, 600, 300), ("3", 2300, 1200, 2500, 1400)))
    lesions = to_lesions(boxes, width=2400, height=1280)
    assert lesions[0].box == (600 / 2400, 100 / 1280, 900 / 2400, 300 / 1280)
    assert lesions[0].pai == 4
    assert lesions[1].box == (2300 / 2400, 1200 / 1280, 1.0, 1.0)


@pytest.mark.parametrize(
    ("obj", "message"),
    [
        (("7", 1, 1, 5, 5), "unknown grade '7'"),
        (("lesion", 1, 1, 5, 5), "unknown grade 'lesion'"),
        (("3", "nan", 1, 5, 5), "not a finite number"),
        (("3", -4, 1, 5, 5), "negative"),
        (("3", "abc", 1, 5, 5), "not a number"),
    ],
)
def test_untrustworthy_objects_are_refused_with_the_reason(tmp_path, obj, message):
    with pytest.raises(AnnotationError, match=message):
        parse_voc(_voc(tmp_path, obj))


def test_malformed_xml_and_degenerate_boxes_are_refused(tmp_path):
    bad = tmp_path / "00021.xml"
    bad.write_text("<annotation><object>")
    with pytest.raises(AnnotationError, match="malformed XML"):
        parse_voc(bad)
    with pytest.raises(AnnotationError, match="degenerate box"):
        to_lesions([RawBox(10, 10, 10, 50, "3")], 2400, 1280)


def _source(tmp_path) -> tuple[object, object]:
    root = tmp_path / "source"
    films = root / "Periapical Dataset" / "Original JPG Images"
    annots = root / "Periapical Dataset" / "Image Annots"
    films.mkdir(parents=True)
    annots.mkdir(parents=True)
    (films / "00011.jpg").write_bytes(film_bytes(1, size=(256, 128)))  # films, not blanks
    (films / "00021.jpg").write_bytes(film_bytes(2, size=(256, 128)))
    (annots / "00011.xml").write_text(VOC.format(objects=OBJ.format(g=3, a=24, b=0, c=48, d=64)))
    (annots / "00021.xml").write_text(VOC.format(objects=""))
    for path in root.rglob("*.*"):
        os.utime(path, ns=(10**18, 10**18))  # long settled: a cache may remember them
    return root, annots / "00021.xml"


def test_unchanged_files_are_not_read_again_and_changed_ones_are(tmp_path, monkeypatch):
    root, xml = _source(tmp_path)
    cache = tmp_path / "index.parquet"
    read = []
    original = index._facts_job
    monkeypatch.setattr(
        index, "_facts_job", lambda job: read.append(f"{job[0]}/{job[1]}") or original(job)
    )
    first = index.index_source(root, cache_path=cache, map=LocalMap(1))
    assert len(read) == 4
    read.clear()
    assert index.index_source(root, cache_path=cache, map=LocalMap(1)) == first
    assert read == []
    xml.write_text(VOC.format(objects=OBJ.format(g=5, a=0, b=0, c=120, d=64)))
    os.utime(xml, ns=(10**18 + 1, 10**18 + 1))
    again = index.index_source(root, cache_path=cache, map=LocalMap(1))
    assert read == [str(xml)]
    film = next(r for r in again if r.stem == "00021" and r.kind.value == "image")
    assert [les.pai for les in film.lesions] == [5] and film.lesions[0].box == (
        0,
        0,
        120 / 256,
        0.5,
    )


def test_files_read_in_worker_processes_give_the_same_records(tmp_path):
    root, _ = _source(tmp_path)
    serial = index.index_source(root, map=LocalMap(1))
    assert index.index_source(root, map=LocalMap(2)) == serial
    assert {r.fate.value for r in serial if r.kind.value == "image"} == {"pending"}


def test_a_file_modified_just_before_reading_is_not_remembered(tmp_path, monkeypatch):
    root, xml = _source(tmp_path)
    xml.write_text(VOC.format(objects=""))  # just now: could change again unnoticed
    cache = tmp_path / "index.parquet"
    index.index_source(root, cache_path=cache, map=LocalMap(1))
    read = []
    original = index._facts_job
    monkeypatch.setattr(
        index, "_facts_job", lambda job: read.append(f"{job[0]}/{job[1]}") or original(job)
    )
    index.index_source(root, cache_path=cache, map=LocalMap(1))
    assert read == [str(xml)]


@pytest.mark.parametrize(
    "text",
    [
        "<html><head><title>Sign in</title></head><body><p>log in</p></body></html>",
        "<svg><rect width='4' height='4'/></svg>",
        "<dataset><annotation><object><name>3</name></object></annotation></dataset>",
    ],
)
def test_well_formed_xml_that_is_not_a_voc_annotation_is_refused(tmp_path, text):
    path = tmp_path / "00011.xml"
    path.write_text(text)
    with pytest.raises(AnnotationError, match="not a VOC annotation"):
        parse_voc(path)


def test_xml_with_entity_declarations_is_refused(tmp_path):
    """An entity can smuggle a grade past a reader (and expand without bound): defusedxml."""
    path = tmp_path / "00011.xml"
    path.write_text(
        '<!DOCTYPE annotation [<!ENTITY g "3">]><annotation><object><name>&g;</name>'
        "<bndbox><xmin>1</xmin><ymin>1</ymin><xmax>5</xmax><ymax>5</ymax></bndbox>"
        "</object></annotation>"
    )
    with pytest.raises(AnnotationError, match="unsafe XML"):
        parse_voc(path)


def _film_fates(tmp_path, films: dict[str, tuple[bytes, str]]) -> dict[str, tuple[Fate, str]]:
    root = write_source(tmp_path / "source", films)
    records = index.index_source(root, map=LocalMap(1))
    return {r.stem: (r.fate, r.reason) for r in records if r.kind is Kind.image}


def test_a_lesion_free_film_needs_a_real_annotation(tmp_path):
    fates = _film_fates(
        tmp_path,
        {
            "00011": (film_bytes(1), voc("00011", [])),
            "00021": (film_bytes(2), "<html><body>Not found</body></html>"),
        },
    )
    assert fates["00011"] == (Fate.pending, "")
    assert fates["00021"][0] is Fate.rejected
    assert "not a VOC annotation" in fates["00021"][1]


def test_a_film_with_an_exif_orientation_is_rejected(tmp_path):
    fates = _film_fates(
        tmp_path,
        {
            "00011": (film_bytes(1, orientation=1), voc("00011")),
            "00021": (film_bytes(2, orientation=6), voc("00021")),
        },
    )
    assert fates["00011"] == (Fate.pending, "")
    assert fates["00021"][0] is Fate.rejected and "EXIF orientation 6" in fates["00021"][1]


def test_limits_on_film_size_box_count_and_duplicate_boxes(tmp_path):
    many = [(3, 2 * k, 0, 2 * k + 1, 1) for k in range(MAX_BOXES_PER_FILM + 1)]
    fates = _film_fates(
        tmp_path,
        {
            "00011": (film_bytes(1, size=(1, 1)), voc("00011", [])),
            "00021": (film_bytes(2, size=(index.MIN_FILM_WIDTH, 64)), voc("00021", [])),
            "00031": (film_bytes(3), voc("00031", [(3, 40, 30, 120, 70)] * 10_000)),
            "00071": (film_bytes(7), voc("00071", [(3, 40, 30, 120, 70)] * 2)),
            "00041": (film_bytes(4), voc("00041", [(3, 40, 30, 120, 70), (4, 120, 70, 40, 30)])),
            "00051": (film_bytes(5), voc("00051", many)),
            "00061": (film_bytes(6), voc("00061", many[:-1])),
        },
    )
    assert fates["00011"][0] is Fate.rejected and "film too small: 1x1" in fates["00011"][1]
    assert fates["00021"][0] is Fate.rejected and "film too small" in fates["00021"][1]
    assert fates["00031"][0] is Fate.rejected and "too many boxes" in fates["00031"][1]
    assert fates["00071"][0] is Fate.rejected and "duplicate box" in fates["00071"][1]
    assert fates["00041"][0] is Fate.rejected and "duplicate box" in fates["00041"][1]
    assert fates["00051"][0] is Fate.rejected and "too many boxes" in fates["00051"][1]
    assert fates["00061"] == (Fate.pending, "")


def test_the_patient_number_is_read_into_memory_and_never_cached(tmp_path):
    films = {
        "00011": (film_bytes(1), voc("00011", filename="PN20417 panoramic.jpg")),
        "00021": (film_bytes(2), voc("00021")),
    }
    root = write_source(tmp_path / "source", films)
    cache = tmp_path / "index.parquet"
    for _ in range(2):  # the second run reads the cache
        records = index.index_source(root, cache_path=cache, map=LocalMap(1))
        numbers = {(r.kind.value, r.stem): r.patient_number for r in records}
        assert numbers[("image", "00011")] == numbers[("annotation", "00011")] == "PN20417"
        assert numbers[("image", "00021")] is None
        assert "PN20417" not in repr(records)
        assert b"20417" not in cache.read_bytes()


FILMS_TRACED = 400
# Bytes a source file the index's driver may reach above its start: the records it hands on
# (path, stem, digest, two lesions a film) and, until its checks end, each file's facts (slots,
# no dict) and a stem's place; here 1,200. The code that held each file's facts with a dict of
# their own, its absolute path, stat key and job, and several dicts by path, reached 1,890.
INDEX_PEAK_PER_FILE = 1500


def test_the_driver_holds_each_file_once_while_the_index_reads_and_checks(tmp_path):
    """The driver's traced peak over a whole index (facts read by two worker processes and
    unpickled here, cache written) is the records and a compact state a file: it grows
    with the archive, so each byte a file is millions on a large one."""
    film, boxes = film_bytes(1), [(4, 40, 30, 120, 70), (3, 150, 20, 200, 90)]
    stems = [f"{n:04d}1" for n in range(FILMS_TRACED)]
    root = write_source(tmp_path / "source", {s: (film, voc(s, boxes)) for s in stems})
    warm = write_source(tmp_path / "warm", {"00011": (film, voc("00011", boxes))})
    index.index_source(warm, cache_path=tmp_path / "warm.parquet", map=LocalMap(2))  # imports
    tracemalloc.start()
    try:
        start = tracemalloc.get_traced_memory()[0]
        records = index.index_source(root, cache_path=tmp_path / "index.parquet", map=LocalMap(2))
        peak = tracemalloc.get_traced_memory()[1] - start
    finally:
        tracemalloc.stop()
    assert [len(r.lesions) for r in records if r.kind is Kind.image] == [2] * FILMS_TRACED
    assert (tmp_path / "index.parquet").exists()
    assert peak <= INDEX_PEAK_PER_FILE * len(records), peak / len(records)
