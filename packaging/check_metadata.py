"""What crates.io and PyPI show for the `lens` command, checked before anything is uploaded.

    python check_metadata.py crate PACKAGED_CARGO_TOML
    python check_metadata.py wheel WHEEL CRATE_METADATA_JSON

`crate`: the manifest `cargo package` wrote for lens-cli has a description, license, README
(present in the package), keywords, categories, repository, homepage and documentation links.
`wheel`: the wheel's METADATA has its name, the crate's version and license, a summary, the
README as Markdown, keywords, classifiers, Homepage/Repository/Documentation links (the crate's
repository), its license files, a Requires-Python; its tag is manylinux; it carries `lens` as a
script. CRATE_METADATA_JSON: `cargo metadata --no-deps --format-version 1` of the workspace.
Exits 0 when all hold, 1 naming each that does not.
"""

from __future__ import annotations

import email.parser
import json
import re
import sys
import tomllib
import zipfile
from pathlib import Path

PYPI_NAME = "lens-trace"
problems: list[str] = []


def need(condition: object, what: str) -> None:
    if not condition:
        problems.append(what)


def check_crate(manifest: Path) -> None:
    package = tomllib.loads(manifest.read_text(encoding="utf-8"))["package"]
    for field in ("description", "license", "repository", "homepage", "documentation"):
        need(package.get(field), f"lens-cli's packaged Cargo.toml has `{field}`")
    readme = package.get("readme")
    need(readme and (manifest.parent / readme).is_file(), "lens-cli's package holds its README")
    need(1 <= len(package.get("keywords", [])) <= 5, "lens-cli has 1 to 5 keywords (crates.io)")
    need(package.get("categories"), "lens-cli has categories")
    for url in ("repository", "homepage", "documentation"):
        need(str(package.get(url, "")).startswith("https://"), f"lens-cli's {url} is an https URL")
    print(f"crate lens-cli {package.get('version')}: {package.get('description')}")


def check_wheel(wheel: Path, cargo_metadata: Path) -> None:
    crate = next(
        p for p in json.loads(cargo_metadata.read_text())["packages"] if p["name"] == "lens-cli"
    )
    # {name}-{version}-{python tag}-{abi tag}-{platform tag}.whl
    platform = wheel.name.removesuffix(".whl").split("-")[-1]
    need(
        re.fullmatch(r"manylinux_\d+_\d+_\w+(\.manylinux\w+)*|manylinux\d+_\w+(\.\w+)*", platform),
        f"the wheel's tag is manylinux (got {platform})",
    )
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        meta_name = next(n for n in names if n.endswith(".dist-info/METADATA"))
        meta = email.parser.Parser().parsestr(archive.read(meta_name).decode("utf-8"))
    need(meta["Name"] == PYPI_NAME, f"the wheel's name is {PYPI_NAME} (got {meta['Name']})")
    need(meta["Version"] == crate["version"], f"the wheel's version is the crate's ({meta['Version']})")
    need(meta["Summary"], "the wheel has a summary")
    need(meta["License-Expression"] == crate["license"], "the wheel's license is the crate's")
    need(
        (meta["Description-Content-Type"] or "").startswith("text/markdown"),
        "the wheel's README is Markdown",
    )
    description = meta.get_payload() or meta["Description"] or ""
    need("pip install lens-trace" in description, "the wheel's README says how to install it")
    need(meta["Keywords"], "the wheel has keywords")
    need(meta.get_all("Classifier"), "the wheel has classifiers")
    need(meta["Requires-Python"], "the wheel says which Pythons it installs into")
    urls = dict(u.split(", ", 1) for u in meta.get_all("Project-URL") or [])
    for label in ("Homepage", "Repository", "Documentation"):
        need(urls.get(label, "").startswith("https://"), f"the wheel links its {label}")
    need(urls.get("Repository") == crate["repository"], "the wheel's Repository is the crate's")
    for license_file in meta.get_all("License-File") or []:
        need(
            any(n.endswith(f".dist-info/licenses/{license_file}") for n in names),
            f"the wheel holds {license_file}",
        )
    need(len(meta.get_all("License-File") or []) == 2, "the wheel names both license files")
    need(any(re.search(r"\.data/scripts/lens$", n) for n in names), "the wheel carries `lens`")
    print(f"wheel {wheel.name}: {meta['Summary']}")


def main() -> int:
    match sys.argv[1:]:
        case ["crate", manifest]:
            check_crate(Path(manifest))
        case ["wheel", wheel, cargo_metadata]:
            check_wheel(Path(wheel), Path(cargo_metadata))
        case _:
            print(__doc__, file=sys.stderr)
            return 2
    for problem in problems:
        print(f"check_metadata: missing: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
