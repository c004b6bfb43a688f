"""One definition per constant: csrc headers, _kernels/defs.py, defs.pxd, ErrorCode and both twins agree."""

import ast
import re
from pathlib import Path

import pytest

from pulsar_codec._kernels import _backend, defs
from pulsar_codec.errors import ErrorCode

ROOT = Path(__file__).resolve().parent.parent
CSRC = ROOT / "csrc"
KERNELS = ROOT / "src" / "pulsar_codec" / "_kernels"
# the headers that define the shared constants; every other header must only use them
DEFINING_HEADERS = ("pc_status.h", "pc_defs.h")
PURE_TWINS = sorted(KERNELS.glob("*_py.py"))
COMPILED_SOURCES = sorted(KERNELS.glob("*_c.pyx"))

# the names defs.py gives integers (WIDTHS and DTYPES are Python-only tables)
DEFS_INTS = {name: getattr(defs, name) for name in defs.__all__ if isinstance(getattr(defs, name), int)}
STATUS_NAMES = [code.name for code in ErrorCode]


def _strip_comments(text: str) -> str:
    return re.sub(r"//[^\n]*", "", re.sub(r"/\*.*?\*/", "", text, flags=re.S))


def _evaluate(expr: str, known: dict[str, int]) -> int:
    """An integer C constant expression: literals, INT64_C(), <<, +, -, *, earlier names."""
    expr = re.sub(r"\b(?:U?INT64_C|U?INT32_C)\(([^)]*)\)", r"(\1)", expr.strip())

    def walk(node: ast.AST) -> int:
        if isinstance(node, ast.Expression):
            return walk(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, int):
            return node.value
        if isinstance(node, ast.Name):
            return known[node.id]
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -walk(node.operand)
        if isinstance(node, ast.BinOp):
            ops = {ast.LShift: lambda a, b: a << b, ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b}
            ops[ast.Mult] = lambda a, b: a * b
            return ops[type(node.op)](walk(node.left), walk(node.right))
        raise ValueError(f"not an integer constant expression: {expr!r}")

    return walk(ast.parse(expr, mode="eval"))


def c_constants(header: Path) -> dict[str, int]:
    """Every enumerator and every object-like integer #define of one header."""
    text = _strip_comments(header.read_text())
    found: dict[str, int] = {}
    for body in re.findall(r"\benum\b[^{;]*\{(.*?)\}", text, flags=re.S):
        following = 0
        for item in filter(None, (part.strip() for part in body.split(","))):
            name, _, value = item.partition("=")
            name = name.strip()
            following = _evaluate(value, found) if value.strip() else following
            found[name] = following
            following += 1
    for name, value in re.findall(r"^#define[ \t]+([A-Za-z_]\w*)[ \t]+(.+)$", text, flags=re.M):
        try:
            found[name] = _evaluate(value, found)
        except (ValueError, KeyError, SyntaxError):
            continue  # a macro that is code, not a number
    return found


def python_name(c_name: str) -> str:
    """PC_X in C is X in defs.py; the Avro K_*, O_* and E_* names are the same on both sides."""
    return c_name.removeprefix("PC_")


def test_parser_reads_the_header_forms(tmp_path):
    assert _evaluate("INT64_C(86400000)", {}) == 86_400_000
    assert _evaluate("(1 << 20)", {}) == 1 << 20
    header = tmp_path / "sample.h"
    header.write_text(
        "enum { A_X = 3, A_Y, A_Z = A_Y + 2 }; /* enum { B = 9 } */\n#define PC_F(x) (x)\n#define PC_N -4\n"
    )
    assert c_constants(header) == {"A_X": 3, "A_Y": 4, "A_Z": 6, "PC_N": -4}


def test_headers_and_defs_agree_both_ways():
    in_c: dict[str, int] = {}
    for name in DEFINING_HEADERS:
        for c_name, value in c_constants(CSRC / name).items():
            if c_name.startswith(("PC_", "K_", "O_", "E_")) and not c_name.endswith("_H"):
                in_c[python_name(c_name)] = value
    assert in_c == DEFS_INTS


def test_no_other_header_defines_a_shared_constant():
    for header in sorted(CSRC.glob("*.h")):
        if header.name in DEFINING_HEADERS:
            continue
        copies = {python_name(n) for n in c_constants(header)} & set(DEFS_INTS)
        assert not copies, f"{header.name} defines {sorted(copies)} again; include pc_defs.h instead"


def test_pxd_declares_every_integer_with_its_c_name():
    text = (KERNELS / "defs.pxd").read_text()
    declared = dict(re.findall(r"^\s+(?:const int64_t\s+)?([A-Z][A-Z0-9_]*)\s+\"(\w+)\"\s*$", text, flags=re.M))
    assert set(declared) == set(DEFS_INTS)
    for name, c_name in declared.items():
        assert python_name(c_name) == name and (c_name == name or c_name == f"PC_{name}"), name


def test_error_codes_are_the_status_codes():
    status = {python_name(n): v for n, v in c_constants(CSRC / "pc_status.h").items() if n.startswith("PC_")}
    assert {code.name: int(code) for code in ErrorCode} == status
    assert all(int(code) == getattr(defs, code.name) for code in ErrorCode)


def _module_level_names(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    names = set()
    for node in tree.body:
        targets = (
            node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        )
        for target in targets:
            for sub in ast.walk(target):
                if isinstance(sub, ast.Name):
                    names.add(sub.id)
    return names


@pytest.mark.parametrize("path", PURE_TWINS, ids=lambda p: p.stem)
def test_pure_twins_import_the_constants_instead_of_copying_them(path):
    copies = _module_level_names(path) & set(DEFS_INTS)
    assert not copies, f"{path.name} assigns {sorted(copies)}; import them from defs"


@pytest.mark.parametrize("path", COMPILED_SOURCES, ids=lambda p: p.stem)
def test_compiled_twins_take_the_constants_from_the_pxd(path):
    text = path.read_text()
    if re.search(r"\bdefs\.", text):  # a kernel with no shared codes (protobuf_encode) needs none
        assert "from . cimport defs" in text
    assert not re.search(r"^cdef enum", text, flags=re.M), f"{path.name} declares its own anonymous enum"
    # a kernel's private enums (ctypedef enum name) never redefine a shared constant
    for block in re.findall(r"^ctypedef enum \w+:[^\n]*\n((?:    .*\n)+)", text, flags=re.M):
        names = set(re.findall(r"^    ([A-Z][A-Z0-9_]*)\b", block, flags=re.M))
        assert not names & set(defs.__all__), f"{path.name} redefines {sorted(names & set(defs.__all__))}"
    # Python-level exports come from the C values, never from literals
    assert not re.findall(r"^[A-Z][A-Z0-9_]* = \d", text, flags=re.M)


def _defs_name(domain: str, name: str) -> str:
    # the encoder twins export their statuses without the ENC_ prefix
    return f"ENC_{name}" if domain == "avro_encode" and not name.startswith("E_") else name


@pytest.mark.parametrize("domain", _backend.DOMAINS)
def test_compiled_twins_export_the_header_values(domain, both_backends):
    compiled, pure = (getattr(b, domain) for b in both_backends)
    exported = [n for n in compiled.__all__ if isinstance(getattr(compiled, n), int)]
    for name in exported:
        value = getattr(compiled, name)
        assert value == getattr(defs, _defs_name(domain, name)) == getattr(pure, name), name
