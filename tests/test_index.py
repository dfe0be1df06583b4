import os

import pytest
from PIL import Image

from curation import index
from curation.index import AnnotationError, RawBox, parse_voc, to_lesions

VOC = """<annotation><filename>PN1234 scan.jpg</filename>
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
    Image.new("L", (240, 128), 90).save(films / "00011.jpg")
    Image.new("L", (240, 128), 90).save(films / "00021.jpg")
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
    monkeypatch.setattr(index, "_facts_job", lambda job: read.append(job[0]) or original(job))
    first = index.index_source(root, cache_path=cache, workers=1)
    assert len(read) == 4
    read.clear()
    assert index.index_source(root, cache_path=cache, workers=1) == first
    assert read == []
    xml.write_text(VOC.format(objects=OBJ.format(g=5, a=0, b=0, c=120, d=64)))
    os.utime(xml, ns=(10**18 + 1, 10**18 + 1))
    again = index.index_source(root, cache_path=cache, workers=1)
    assert read == [str(xml)]
    film = next(r for r in again if r.stem == "00021" and r.kind.value == "image")
    assert [les.pai for les in film.lesions] == [5] and film.lesions[0].box == (0, 0, 0.5, 0.5)


def test_files_read_in_worker_processes_give_the_same_records(tmp_path):
    root, _ = _source(tmp_path)
    serial = index.index_source(root, workers=1)
    assert index.index_source(root, workers=2) == serial
    assert {r.fate.value for r in serial if r.kind.value == "image"} == {"pending"}


def test_a_file_modified_just_before_reading_is_not_remembered(tmp_path, monkeypatch):
    root, xml = _source(tmp_path)
    xml.write_text(VOC.format(objects=""))  # just now: could change again unnoticed
    cache = tmp_path / "index.parquet"
    index.index_source(root, cache_path=cache, workers=1)
    read = []
    original = index._facts_job
    monkeypatch.setattr(index, "_facts_job", lambda job: read.append(job[0]) or original(job))
    index.index_source(root, cache_path=cache, workers=1)
    assert read == [str(xml)]
