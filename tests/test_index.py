import pytest

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
