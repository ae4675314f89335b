"""Which installed distribution a shared object belongs to (host/installed_files.py), on made-up
site directories."""

from __future__ import annotations

from pathlib import Path

from pytest_burnperf.host import installed_files


def _install(site: Path, dist: str, version: str, files: list[str]) -> None:
    info = site / f"{dist}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "RECORD").write_text(
        "".join(f"{f},sha256=x,1\n" for f in [*files, f"{info.name}/RECORD"]), encoding="utf-8"
    )
    for f in files:
        (site / f).parent.mkdir(parents=True, exist_ok=True)
        (site / f).write_bytes(b"\x7fELF")


def test_an_object_is_found_by_its_record_through_links_and_lib_folders(tmp_path: Path) -> None:
    site = tmp_path / "lib" / "site-packages"
    _install(site, "scipy", "1.17.1", ["scipy/special/_ufuncs.so", "scipy.libs/libblas-1.so"])
    _install(site, "opencv_python", "4.10.0", ["cv2/cv2.abi3.so"])  # named otherwise
    link = tmp_path / "linked.so"
    link.symlink_to(site / "scipy" / "special" / "_ufuncs.so")
    assert installed_files.distribution_of(str(site / "scipy.libs/libblas-1.so")) == (
        "scipy",
        "1.17.1",
    )
    assert installed_files.distribution_of(str(link)) == ("scipy", "1.17.1")
    assert installed_files.distribution_of(str(site / "cv2/cv2.abi3.so")) == (
        "opencv-python",
        "4.10.0",
    )


def test_objects_outside_any_distribution_name_none(tmp_path: Path) -> None:
    site = tmp_path / "site"
    _install(site, "numpy", "2.4.6", ["numpy/_core/_multiarray_umath.so"])
    stray = site / "numpy" / "built_here.so"  # in the folder, not in its RECORD
    stray.write_bytes(b"")
    elsewhere = tmp_path / "usr" / "libc.so.6"
    elsewhere.parent.mkdir()
    elsewhere.write_bytes(b"")
    assert installed_files.distribution_of(str(stray)) is None
    assert installed_files.distribution_of(str(elsewhere)) is None


def test_called_distributions_leave_out_the_device_the_project_and_checkout_builds(
    tmp_path: Path,
) -> None:
    site = tmp_path / "site"
    _install(site, "numpy", "2.4.6", ["numpy/a.so"])
    _install(site, "scipy", "1.17.1", ["scipy/b.so"])
    _install(site, "my_lib", "1.2.0", ["my_lib/c.so"])
    _install(site, "other", "0.3.dev4+g1a2b3c", ["other/d.so"])
    objects = [str(site / f) for f in ("numpy/a.so", "scipy/b.so", "my_lib/c.so", "other/d.so")]
    got = installed_files.called_distributions([*objects, "/usr/bin/python3"], ["numpy", "My-Lib"])
    assert got == {"scipy": "1.17.1"}
    assert installed_files.from_a_checkout("1.3.dev4") and not installed_files.from_a_checkout(
        "1.3"
    )
