"""The review page written from records: order by closeness to the limits, escaping of
hostile ids, determinism, stale thumbnails, refusals, splits and rule counts, and the sample
build's page and its enlarged views."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from PIL import Image

from curation.review.closeness import (
    ReviewCluster,
    ReviewError,
    ReviewGroup,
    ReviewLink,
    ReviewMember,
    RuleCounts,
)
from curation.review.review import write_review_page
from tests.review.review_records import (
    HOSTILE,
    Page,
    review_link,
    review_member,
)


def _write(out: Path, films: dict[str, Path], groups, clusters, synthetic: bool = False) -> str:
    index = write_review_page(
        out, groups, clusters, films.__getitem__, title="Review <b>", synthetic=synthetic
    )
    assert index == out / "index.html"
    return index.read_text("utf-8")


def test_groups_are_ordered_by_their_largest_difference_to_limit_ratio(tmp_path, films):
    # By absolute difference f1 would come first, by id too; by ratio f7 (5.5/6) leads.
    groups = [
        ReviewGroup("f1", (review_member("f2", 8.0, limit=20.0), review_member("f3", 1.0))),  # 0.40
        ReviewGroup("f4", (review_member("f5", 2.0), review_member("f6", 4.5))),  # 0.75
        ReviewGroup("f7", (review_member("f8", 5.5),)),  # 0.92
    ]
    page = Page(_write(tmp_path / "out", films, groups, []))
    assert page.order("group") == ["f7", "f4", "f1"]
    text = "".join(page.text)
    assert "5.50 of limit 6.00" in text and "8.00 of limit 20.00" in text
    # within a group the dropped film closest to its limit comes first
    assert text.index("f6") < text.index("f5")


def test_clusters_are_ordered_by_the_weakest_link_they_need_not_the_largest_link(tmp_path, films):
    # Cluster f1 holds a redundant 29-bit link (a cycle); the link it needs is 27 bits.
    # Cluster f4 needs its single 28-bit link, so it is the closer call.
    cycle = ReviewCluster(
        "f1",
        ("f1", "f2", "f3"),
        (review_link("f1", "f2", 27), review_link("f2", "f3", 12), review_link("f1", "f3", 29)),
    )
    single = ReviewCluster("f4", ("f4", "f5"), (review_link("f4", "f5", 28),))
    # A patient link holds f7 and f8 whatever the hash distance, so 25 bits is not needed.
    patient = ReviewCluster(
        "f6",
        ("f6", "f7", "f8"),
        (review_link("f7", "f8", None), review_link("f6", "f7", 20), review_link("f6", "f8", 25)),
    )
    # A 0-bit link ties with the patient link on ratio; the patient link still holds the cluster.
    only_patient = ReviewCluster(
        "f9", ("f9", "turned"), (review_link("f9", "turned", 0), review_link("f9", "turned", None))
    )
    lone = ReviewCluster("lone", ("lone",), ())
    clusters = [only_patient, patient, lone, cycle, single]
    html = _write(tmp_path / "out", films, [], clusters)
    page = Page(html)
    assert page.order("cluster") == ["f4", "f1", "f6", "f9"]
    text = "".join(page.text)
    assert "27 of 30 bits (margin 3)weakest needed link" in text
    assert "29 of 30 bits (margin 1)not needed: films already joined" in text
    assert "20 of 30 bits (margin 10)weakest needed link" in text
    assert "25 of 30 bits (margin 5)not needed: films already joined" in text
    assert "held by patient links only" in text and "patient link (no threshold)" in text
    # the 0-bit link beside the patient link decides nothing, and says so
    assert "0 of 30 bits (margin 30)not needed: films already joined" in text
    assert "clusters held by patient links only1" in text
    assert "lone" not in text  # single-film clusters are not decisions


def test_every_film_gets_a_thumbnail_and_a_turned_film_stays_portrait(tmp_path, films):
    groups = [
        ReviewGroup("f1", (review_member("turned", 3.0, kind="rotation"), review_member("f2", 1.0)))
    ]
    out = tmp_path / "out"
    page = Page(
        _write(
            out, films, groups, [ReviewCluster("f3", ("f3", "f4"), (review_link("f3", "f4", 9),))]
        )
    )
    shown = {image["alt"]: image for image in page.images}
    assert sorted(shown) == ["f1", "f2", "f3", "f4", "turned"]
    for image in page.images:
        with Image.open(out / image["src"]) as thumb:
            assert thumb.size == (int(image["width"]), int(image["height"]))
            assert max(thumb.size) <= 192
    assert (int(shown["turned"]["width"]), int(shown["turned"]["height"])) == (101, 192)
    assert (int(shown["f1"]["width"]), int(shown["f1"]["height"])) == (192, 101)


def test_hostile_ids_and_evidence_are_escaped_and_thumbnails_stay_in_their_folder(tmp_path, films):
    evil = ReviewMember(
        HOSTILE, False, "<i>noised</i>", "identity", 2, 1.0, 6.0, "<img src=x onerror=alert(1)>"
    )
    clusters = [
        ReviewCluster(HOSTILE, (HOSTILE, "f2"), (ReviewLink(HOSTILE, "f2", "<b>x", 3, 30),))
    ]
    out = tmp_path / "out"
    html = _write(out, films, [ReviewGroup("f1", (evil,))], clusters)
    page = Page(html)
    assert page.tags.count("script") == 2  # the page's own two; the hostile id made none
    assert "b" not in page.tags and "i" not in page.tags
    assert [image["alt"] for image in page.images].count(HOSTILE) == 2
    assert all(not image["src"].startswith("x") for image in page.images)
    text = "".join(page.text)
    assert HOSTILE in text and "<img src=x onerror=alert(1)>" in text and "Review <b>" in text
    assert not (tmp_path / "escape").exists() and not (tmp_path / "escape.jpg").exists()
    written = sorted(p.name for p in (out / "thumbs").iterdir())
    assert len(written) == 3 and all("/" not in name and "<" not in name for name in written)


def test_the_page_is_self_contained(tmp_path, films):
    groups = [ReviewGroup("f1", (review_member("f2", 1.0),))]
    html = _write(tmp_path / "out", films, groups, [])
    page = Page(html)
    assert "http:" not in html and "https:" not in html
    assert page.tags.count("script") == 2 and "<script src" not in html  # inline only
    assert all(image["src"].startswith("thumbs/") for image in page.images)
    assert all(href.startswith(("#", "films/")) for href in page.links)
    assert re.findall(r'<image href="([^"]+)"', html) == ["films/f1.jpg", "films/f2.jpg"]


def test_same_inputs_give_identical_bytes_and_a_rerun_removes_stale_thumbnails(tmp_path, films):
    groups = [ReviewGroup("f1", (review_member("f2", 1.0), review_member(HOSTILE, 2.0)))]
    clusters = [ReviewCluster("f3", ("f3", "f4"), (review_link("f3", "f4", 9),))]

    def files(out: Path) -> dict[str, bytes]:
        return {
            str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()
        }

    _write(tmp_path / "a", films, groups, clusters)
    _write(tmp_path / "b", films, groups, clusters)
    first = files(tmp_path / "a")
    assert first == files(tmp_path / "b")
    assert len(first) == 11  # the page, five thumbnails and five full-size films

    (tmp_path / "a" / "thumbs" / ".f9.jpg.123.tmp").write_bytes(b"left by a crash")
    _write(tmp_path / "a", films, [ReviewGroup("f1", (review_member("f2", 1.0),))], [])
    assert sorted(files(tmp_path / "a")) == [
        "films/f1.jpg",
        "films/f2.jpg",
        "index.html",
        "thumbs/f1.jpg",
        "thumbs/f2.jpg",
    ]
    assert files(tmp_path / "a")["thumbs/f1.jpg"] == first["thumbs/f1.jpg"]


def test_banner_only_for_the_synthetic_sample_and_summary_counts(tmp_path, films):
    groups = [
        ReviewGroup("f1", (review_member("f2", 1.0), review_member("f3", 1.0, kind="noised"))),
        ReviewGroup("f4", (review_member("f5", 1.0, kind="re-filing"),)),
    ]
    clusters = [
        ReviewCluster(
            "f6", ("f6", "f7", "f8"), (review_link("f6", "f7", 3), review_link("f7", "f8", None))
        )
    ]
    real = "".join(Page(_write(tmp_path / "real", films, groups, clusters)).text)
    synthetic = "".join(Page(_write(tmp_path / "syn", films, groups, clusters, True)).text)
    assert "Synthetic sample" in synthetic and "Synthetic sample" not in real
    assert "same-picture groups2" in real
    assert "dropped as the same picture as a kept film3 (mirror 1, noised 1, re-filing 1)" in real
    assert "multi-film look-alike clusters1" in real and "films in those clusters3" in real


def test_an_unreadable_film_is_shown_as_missing_with_the_reason(tmp_path, films):
    broken = tmp_path / "broken.jpg"
    broken.write_bytes(b"not a jpeg")
    sources = {**films, "broken": broken, "gone": tmp_path / "gone.jpg"}
    groups = [ReviewGroup("f1", (review_member("broken", 1.0), review_member("gone", 2.0)))]
    out = tmp_path / "out"
    page = Page(_write(out, sources, groups, []))
    text = "".join(page.text)
    assert "thumbnail unavailable: broken.jpg is not a readable image." in text
    assert "thumbnail unavailable: gone.jpg does not exist." in text
    assert "thumbnails unavailable2" in text
    assert {image["alt"] for image in page.images} == {"f1"}
    assert "full-size film unavailable: broken: broken.jpg is not a publishable JPEG" in text
    assert "gone: gone.jpg does not exist." in text


def test_a_film_unreadable_since_the_last_page_loses_its_old_files(tmp_path, films):
    groups = [ReviewGroup("f1", (review_member("f2", 1.0),))]
    out = tmp_path / "out"
    _write(out, films, groups, [])
    assert (out / "thumbs" / "f2.jpg").is_file() and (out / "films" / "f2.jpg").is_file()
    broken = tmp_path / "broken.jpg"
    broken.write_bytes(b"not a jpeg")
    text = _write(out, {**films, "f2": broken}, groups, [])
    assert "thumbnail unavailable: broken.jpg is not a readable image." in text
    assert sorted(p.name for p in (out / "thumbs").iterdir()) == ["f1.jpg"]
    assert sorted(p.name for p in (out / "films").iterdir()) == ["f1.jpg"]


@pytest.mark.parametrize(
    ("groups", "clusters", "message"),
    [
        (
            [ReviewGroup("f1", (review_member("f2", 1.0, limit=0.0),))],
            [],
            "'f2' has measurement 1.0 against limit 0.0",
        ),
        ([ReviewGroup("f1", (review_member("f2", float("nan")),))], [], "'f2' has measurement nan"),
        (
            [],
            [ReviewCluster("f1", ("f1", "f2"), (review_link("f1", "f3", 4),))],
            "'f1' and 'f3', which are not both",
        ),
        (
            [ReviewGroup("f1", (ReviewMember("f1", True, "", "identity", 0, 0.0, 6.0, "kept"),))],
            [],
            "Group 'f1' lists 'f1' as kept among its dropped films",
        ),
        (
            [],
            [ReviewCluster("f1", ("f1", "f2", "f3"), (review_link("f1", "f2", 4),))],
            "films no listed link connects",
        ),
    ],
)
def test_contradictory_records_are_refused_in_one_sentence_before_anything_is_written(
    tmp_path, films, groups, clusters, message
):
    with pytest.raises(ReviewError, match=message) as error:
        _write(tmp_path / "out", films, groups, clusters)
    assert str(error.value).count(". ") == 0 and str(error.value).endswith(".")
    assert not (tmp_path / "out").exists()


def test_every_group_and_cluster_says_its_split_and_each_rule_its_count(tmp_path, films):
    near_member = ReviewMember("f2", False, "mirror", "mirror", 1, 5.5, 6.0, "f2 is the copy.")
    groups = [ReviewGroup("f1", (near_member,)), ReviewGroup("f3", (review_member("f4", 1.0),))]
    clusters = [
        ReviewCluster("f5", ("f5", "f6"), (review_link("f5", "f6", 29),)),
        ReviewCluster("f7", ("f7", "f8"), (review_link("f7", "f8", 3),)),
    ]
    split_of = {"f1": "validation", "f3": "train", "f5": "test", "f6": "test"}
    split_of |= {"f7": "train", "f8": "train"}
    index = write_review_page(
        tmp_path / "out",
        groups,
        clusters,
        films.__getitem__,
        title="t",
        synthetic=False,
        split_of=split_of,
        rules=RuleCounts(folder_rule=214, same_picture=2, bad_file=7),
    )
    page = Page(index.read_text("utf-8"))

    assert "kept f1 in validation" in page.of("f1") and "f1kept, validation" in page.of("f1")
    assert "f2dropped: the same picture as f1" in page.of("f1")
    assert "kept f3 in train" in page.of("f3")
    assert "all in test" in page.of("f5") and "f6test" in page.of("f5")
    assert "all in train" in page.of("f7")
    text = "".join(page.text)
    assert "films in the datasettrain 3, validation 1, test 2" in text
    assert "dropped by the folder rule (augmented copies)214" in text
    assert "dropped as the same picture as a kept film2 (mirror 2)" in text
    assert "rejected as bad files7" in text
    assert "hash distance1 bit" in text and "1 bits" not in text
    # Near-limit decisions first (cluster f5 at 97%, group f1 at 92%), each a working link.
    assert page.links[:2] == ["#cluster-1", "#group-1"]
    anchors = [link for link in page.links if link.startswith("#")]
    assert all(link.removeprefix("#") in page.ids for link in anchors)
    assert {"group-1", "group-2", "cluster-1", "cluster-2"} <= page.ids  # each once, anchored


def test_the_sample_builds_page_says_each_groups_and_clusters_split(sample_build: Path):
    import pyarrow.parquet as pq

    rows = pq.read_table(sample_build / "manifest.parquet").to_pylist()
    split_of = {
        r["film_id"]: r["reason"].removeprefix("kept: ")
        for r in rows
        if r["kind"] == "image" and r["fate"] == "kept"
    }
    page = Page((sample_build / "review" / "index.html").read_text("utf-8"))
    groups, clusters = page.order("group"), page.order("cluster")
    assert groups and clusters
    for kept in groups:
        assert f"kept {kept} in {split_of[kept]}" in page.of(kept)
    for cluster in clusters:
        assert f"all in {split_of[cluster]}" in page.of(cluster)
    dropped = sum(r["kind"] == "image" and r["fate"] == "dropped" for r in rows)
    text = "".join(page.text)
    folder = int(re.search(r"dropped by the folder rule \(augmented copies\)(\d+)", text)[1])
    same = int(re.search(r"dropped as the same picture as a kept film(\d+)", text)[1])
    assert folder + same == dropped and folder > 0 and same > 0


# The first screen, a click on the first film and the filters, as a reader meets them.
def _views(html: str) -> dict[str, str]:
    """Each enlarged view's markup, by its id."""
    return dict(re.findall(r'<template id="(view-\d+)">(.*?)</template>', html, flags=re.DOTALL))


def test_the_sample_builds_views_draw_each_films_boxes_and_the_framed_copies_features(
    sample_build: Path,
):
    import pyarrow.parquet as pq

    html = (sample_build / "review" / "index.html").read_text("utf-8")
    views = _views(html)
    lesions = {}
    for shard in sorted((sample_build / "dataset" / "data").glob("*.parquet")):
        for row in pq.read_table(shard, columns=["film_id", "lesions"]).to_pylist():
            lesions[row["film_id"]] = len(row["lesions"])
    # A cluster's film opens alone: one box per lesion its dataset row has.
    singles = re.findall(r'data-view="(view-\d+)" title="enlarge ([^"]+)"', html)
    alone = [(view, film) for view, film in singles if views[view].count("<image ") == 1]
    for view, film in alone:
        assert views[view].count('<rect class="lesion"') == lesions[film], film
    assert alone and any(lesions[film] for _, film in alone)
    # Copies under another frame open with their matched features drawn; whole-frame ones not.
    members = re.findall(
        r'<div class="member"[^>]* data-kind="([^"]+)"[^>]*><figure class="kept">'
        r'<div class="thumb"><a class="open" href="[^"]*" data-view="(view-\d+)"',
        html,
    )
    framed = {"cropped", "padded", "rotated", "re-toned"}
    assert {kind for kind, _ in members} & framed
    for kind, view in members:
        if kind in framed:
            assert "<line " in views[view], (kind, view)
        elif kind != "re-filing":  # a re-filing is whole-frame, or framed when a lesion was drawn
            assert "<line " not in views[view], (kind, view)


def test_a_visit_link_opens_both_films_and_says_when_their_features_do_not_agree(tmp_path, films):
    # f6 and f7 are unrelated noise: the link claims a visit, the page matches them again and
    # draws nothing rather than lines between unrelated points.
    visit = ReviewLink("f6", "f7", "visit of one patient (90 matched features)", 20, 30, True)
    html = _write(tmp_path / "out", films, [], [ReviewCluster("f6", ("f6", "f7"), (visit,))])
    [view] = re.findall(r'<a href="#(view-\d+)" data-view="\1">matched features</a>', html)
    drawn = _views(html)[view]
    assert re.findall(r'<image href="([^"]+)"', drawn) == ["films/f6.jpg", "films/f7.jpg"]
    assert "<line " not in drawn
    assert "no matched features to draw (the two films&#39; features disagree)" in drawn
