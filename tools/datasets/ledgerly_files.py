"""The source files of "ledgerly", a small invented invoicing library the coding agent works
on in the coding_agent dataset. Written for harpe_lab; the agent's tools read, grep, test
and patch these texts."""

from __future__ import annotations

README = '''# ledgerly

Small, dependable invoices for Python.

```python
from ledgerly import Invoice, Money

inv = Invoice(number="2026-0042", customer="Ferreira Studio")
inv.add("Logo design", quantity=1, unit_price=Money("480.00"), category="services")
inv.add("Printed booklets", quantity=250, unit_price=Money("1.15"), category="goods")
print(inv.total())          # Money('913.33') with the default tax table
```

## Design

* All amounts are `Money`, a thin wrapper around `decimal.Decimal` with two places.
* Tax is looked up per line by category in `ledgerly.tax.TAX_RATES`.
* Totals are rounded once per line, then summed (the accountants' convention).
* `ledgerly.export` writes invoices as JSON for the accounting system.

## Development

    pip install -e .[dev]
    pytest
'''

MONEY = '''"""Money: decimal amounts with exactly two places."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import ROUND_HALF_EVEN, Decimal, InvalidOperation

__all__ = ["Money", "CENT"]

CENT = Decimal("0.01")


def _to_decimal(value: object) -> Decimal:
    if isinstance(value, Money):
        return value.amount
    if isinstance(value, float):
        # floats carry binary noise; go through str so 0.1 stays 0.1
        value = repr(value)
    try:
        return Decimal(value)  # type: ignore[arg-type]
    except (InvalidOperation, TypeError) as exc:
        raise ValueError(f"not an amount: {value!r}") from exc


@dataclass(frozen=True, order=True)
class Money:
    """An amount in the invoice currency, always quantised to cents."""

    amount: Decimal

    def __init__(self, value: object = "0") -> None:
        object.__setattr__(self, "amount", _to_decimal(value).quantize(CENT, rounding=ROUND_HALF_EVEN))

    @classmethod
    def exact(cls, value: object) -> Decimal:
        """The unrounded decimal value, for intermediate sums."""
        return _to_decimal(value)

    def __add__(self, other: object) -> "Money":
        return Money(self.amount + _to_decimal(other))

    __radd__ = __add__

    def __sub__(self, other: object) -> "Money":
        return Money(self.amount - _to_decimal(other))

    def __mul__(self, factor: object) -> "Money":
        return Money(self.amount * _to_decimal(factor))

    __rmul__ = __mul__

    def __neg__(self) -> "Money":
        return Money(-self.amount)

    def __bool__(self) -> bool:
        return self.amount != 0

    def __str__(self) -> str:
        return f"{self.amount:.2f}"

    def __repr__(self) -> str:
        return f"Money('{self.amount:.2f}')"

    @staticmethod
    def sum(values: "list[Money]") -> "Money":
        total = Decimal("0")
        for v in values:
            total += v.amount
        return Money(total)
'''

TAX = '''"""Tax rates by line category."""

from __future__ import annotations

from decimal import Decimal

__all__ = ["TAX_RATES", "rate_for", "UnknownCategory"]

# Rates for the default jurisdiction. Categories are lower-case.
TAX_RATES: dict[str, Decimal] = {
    "goods": Decimal("0.19"),
    "services": Decimal("0.19"),
    "food": Decimal("0.07"),
    "exempt": Decimal("0"),
}


class UnknownCategory(KeyError):
    """A line's category has no tax rate."""


def rate_for(category: str, table: "dict[str, Decimal] | None" = None) -> Decimal:
    """The tax rate for ``category`` (case-insensitive)."""
    rates = TAX_RATES if table is None else table
    key = category.strip().lower()
    try:
        return rates[key]
    except KeyError:
        known = ", ".join(sorted(rates))
        raise UnknownCategory(f"no tax rate for category {category!r}; known: {known}") from None
'''

INVOICE = '''"""Invoices: lines, tax and totals."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date
from decimal import Decimal

from .money import Money
from .tax import rate_for

__all__ = ["Line", "Invoice"]


@dataclass(frozen=True)
class Line:
    """One invoice line."""

    description: str
    quantity: Decimal
    unit_price: Money
    category: str = "goods"

    def __post_init__(self) -> None:
        if self.quantity <= 0:
            raise ValueError(f"quantity must be positive, got {self.quantity}")

    def net(self) -> Money:
        return Money(self.unit_price.amount * self.quantity)

    def tax(self) -> Money:
        return Money(self.net().amount * rate_for(self.category))

    def gross(self) -> Money:
        return self.net() + self.tax()


@dataclass
class Invoice:
    """An invoice being built. Lines are kept in the order they were added."""

    number: str
    customer: str
    issued: date = field(default_factory=date.today)
    lines: list[Line] = field(default_factory=list)
    discount: Decimal = Decimal("0")

    def add(self, description: str, *, quantity: object = 1, unit_price: Money, category: str = "goods") -> Line:
        line = Line(description, Decimal(str(quantity)), unit_price, category)
        self.lines.append(line)
        return line

    def net(self) -> Money:
        return Money.sum([line.net() for line in self.lines])

    def tax(self) -> Money:
        return Money.sum([line.tax() for line in self.lines])

    def total(self) -> Money:
        """Gross total after the invoice-level discount (a fraction, 0.05 = 5%)."""
        gross = Money.sum([line.gross() for line in self.lines])
        if self.discount:
            gross = gross - gross * self.discount
        return gross

    def tax_breakdown(self) -> dict[str, Money]:
        """Tax per category, for the summary box at the bottom of the invoice."""
        out: dict[str, Money] = {}
        for line in self.lines:
            out[line.category] = out.get(line.category, Money()) + line.tax()
        return out

    def is_empty(self) -> bool:
        return not self.lines

    # TODO: per-line discounts (requested by the Ferreira Studio account)
'''

EXPORT = '''"""Exports for the accounting system."""

from __future__ import annotations

import json

from .invoice import Invoice

__all__ = ["to_json"]


def to_json(invoice: Invoice) -> str:
    """The invoice as the JSON document the accounting system imports."""
    # TODO: add a "schema" version field once the accounting team confirms the format
    return json.dumps(
        {
            "number": invoice.number,
            "customer": invoice.customer,
            "issued": invoice.issued.isoformat(),
            "lines": [
                {
                    "description": line.description,
                    "quantity": str(line.quantity),
                    "unit_price": str(line.unit_price),
                    "category": line.category,
                    "net": str(line.net()),
                    "tax": str(line.tax()),
                }
                for line in invoice.lines
            ],
            "net": str(invoice.net()),
            "tax": str(invoice.tax()),
            "total": str(invoice.total()),
        },
        indent=2,
    )
'''

TEST_INVOICE = '''from datetime import date
from decimal import Decimal

import pytest

from ledgerly import Invoice, Money
from ledgerly.tax import UnknownCategory


def make(*lines):
    inv = Invoice(number="T-1", customer="Test", issued=date(2026, 1, 15))
    for description, quantity, price, category in lines:
        inv.add(description, quantity=quantity, unit_price=Money(price), category=category)
    return inv


def test_empty_invoice_totals_zero():
    inv = make()
    assert inv.is_empty()
    assert inv.total() == Money("0")


def test_single_line_net_tax_total():
    inv = make(("Widget", 2, "10.00", "goods"))
    assert inv.net() == Money("20.00")
    assert inv.tax() == Money("3.80")
    assert inv.total() == Money("23.80")


def test_total_rounds_half_up():
    # 8.51 + 1.62 tax = 10.13, plus a half-cent stamp that must round up to 0.01
    inv = make(("Half-cent case", 1, "8.51", "goods"))
    inv.add("Stamp", quantity=1, unit_price=Money("0.005"), category="exempt")
    assert inv.total() == Money("10.14")


def test_discount_applies_to_gross():
    inv = make(("Consulting", 3, "100.00", "services"))
    inv.discount = Decimal("0.10")
    assert inv.total() == Money("321.30")


def test_food_uses_reduced_rate():
    inv = make(("Catering", 1, "100.00", "food"))
    assert inv.tax() == Money("7.00")


def test_reduced_rate_for_books():
    inv = make(("Handbook", 4, "25.00", "books"))
    assert inv.tax() == Money("7.00")


def test_unknown_category_is_rejected():
    inv = make(("Mystery", 1, "1.00", "antiques"))
    with pytest.raises(UnknownCategory, match="antiques"):
        inv.tax()


def test_quantity_must_be_positive():
    with pytest.raises(ValueError, match="positive"):
        make(("Nothing", 0, "1.00", "goods"))


def test_tax_breakdown_by_category():
    inv = make(("A", 1, "10.00", "goods"), ("B", 1, "10.00", "food"), ("C", 1, "10.00", "goods"))
    assert inv.tax_breakdown() == {"goods": Money("3.80"), "food": Money("0.70")}


@pytest.mark.parametrize("quantity", [1, 2, 3, 7, 12, 250])
def test_lines_scale_with_quantity(quantity):
    inv = make(("Item", quantity, "1.15", "goods"))
    assert inv.net() == Money(Decimal("1.15") * quantity)
'''

TEST_MONEY = '''from decimal import Decimal

import pytest

from ledgerly import Money


def test_quantises_to_cents():
    assert Money("1.234").amount == Decimal("1.23")


def test_float_input_has_no_binary_noise():
    assert Money(0.1) + Money(0.2) == Money("0.30")


@pytest.mark.parametrize("a,b,expected", [("1.00", "2.00", "3.00"), ("0.10", "0.20", "0.30"), ("-1.00", "1.00", "0.00")])
def test_addition(a, b, expected):
    assert Money(a) + Money(b) == Money(expected)


def test_multiplication_by_decimal():
    assert Money("10.00") * Decimal("0.19") == Money("1.90")


def test_sum_of_empty_list_is_zero():
    assert Money.sum([]) == Money()


def test_repr_and_str():
    assert repr(Money("5")) == "Money('5.00')"
    assert str(Money("5")) == "5.00"


def test_rejects_garbage():
    with pytest.raises(ValueError, match="not an amount"):
        Money("ten euros")
'''

TEST_EXPORT = '''import json
from datetime import date

from ledgerly import Invoice, Money
from ledgerly.export import to_json


def sample():
    inv = Invoice(number="2026-0042", customer="Ferreira Studio", issued=date(2026, 2, 1))
    inv.add("Logo design", quantity=1, unit_price=Money("480.00"), category="services")
    inv.add("Printed booklets", quantity=250, unit_price=Money("1.15"), category="goods")
    return inv


def test_json_has_all_lines():
    doc = json.loads(to_json(sample()))
    assert [line["description"] for line in doc["lines"]] == ["Logo design", "Printed booklets"]


def test_json_totals_are_strings():
    doc = json.loads(to_json(sample()))
    assert doc["total"] == "913.33"
'''

INIT = '''"""ledgerly: small, dependable invoices."""

from .invoice import Invoice, Line
from .money import Money

__all__ = ["Invoice", "Line", "Money"]
__version__ = "0.3.2"
'''

PYPROJECT = '''[build-system]
requires = ["setuptools>=68"]
build-backend = "setuptools.build_meta"

[project]
name = "ledgerly"
version = "0.3.2"
description = "Small, dependable invoices."
requires-python = ">=3.10"
license = { text = "MIT" }

[project.optional-dependencies]
dev = ["pytest>=8", "pytest-cov>=5"]

[tool.pytest.ini_options]
addopts = "-q"
'''

CHANGELOG = '''# Changelog

## 0.3.2 — 2026-07-28
- `Invoice.tax_breakdown()` for the summary box.
- Fix: `Money(0.1)` no longer carries binary noise.

## 0.3.1 — 2026-06-30
- Invoice-level discounts (`Invoice.discount`).

## 0.3.0 — 2026-05-12
- JSON export (`ledgerly.export.to_json`).
- Tax per line category (`ledgerly.tax`).
'''

FILES = {
    "README.md": README,
    "pyproject.toml": PYPROJECT,
    "CHANGELOG.md": CHANGELOG,
    "ledgerly/__init__.py": INIT,
    "ledgerly/money.py": MONEY,
    "ledgerly/tax.py": TAX,
    "ledgerly/invoice.py": INVOICE,
    "ledgerly/export.py": EXPORT,
    "tests/test_invoice.py": TEST_INVOICE,
    "tests/test_money.py": TEST_MONEY,
    "tests/test_export.py": TEST_EXPORT,
}


SPEC = """# Accounting import: invoice documents (format 2)

Maintained by the finance systems team. This page describes the JSON documents the
accounting system imports from billing tools such as ledgerly. Format 1 (2024) is still
accepted until 2027-01-01; new integrations should write format 2.

## 1. Transport

Documents are uploaded as UTF-8 JSON, one invoice per file, to the `incoming/` folder of
the finance share. File names are `<invoice number>.json`. Files larger than 5 MB are
rejected. A CSV variant (section 7) exists for bulk corrections only.

## 2. Top-level fields

| field      | type            | required | notes                                                   |
|------------|-----------------|----------|---------------------------------------------------------|
| schema     | integer         | yes (2)  | the format version; `2` for this document               |
| number     | string          | yes      | unique per issuer; letters, digits, `-` and `/`         |
| customer   | string          | yes      | as printed on the invoice                               |
| customer_id| string          | no       | the CRM id, when known                                  |
| issued     | string (date)   | yes      | ISO 8601 date, no time                                  |
| due        | string (date)   | no       | defaults to issued + 30 days                            |
| currency   | string          | yes (2)  | ISO 4217 code; format 1 assumed EUR                     |
| lines      | array of lines  | yes      | at least one                                            |
| net        | decimal string  | yes      | sum of line nets                                        |
| tax        | decimal string  | yes      | sum of line taxes                                       |
| total      | decimal string  | yes      | net + tax - discount                                    |
| discount   | decimal string  | no       | absolute amount, not a fraction                         |

Fields marked "yes (2)" are required from format 2 on.

## 3. Lines

| field       | type           | required | notes                                        |
|-------------|----------------|----------|----------------------------------------------|
| description | string         | yes      | max 200 characters                           |
| quantity    | decimal string | yes      | positive; up to 3 decimal places             |
| unit_price  | decimal string | yes      | up to 4 decimal places                       |
| category    | string         | yes      | one of the tax categories in section 5       |
| net         | decimal string | yes      | quantity x unit_price, rounded to 2 places   |
| tax         | decimal string | yes      | net x rate, rounded to 2 places              |

## 4. Amounts and rounding

All amounts are strings holding a decimal number with a `.` decimal mark and no thousands
separators. Money amounts have exactly two decimal places. Rounding is **half up**
(0.005 becomes 0.01) and is applied per line, to the net and then to the tax, before
summing. The importer recomputes every total and rejects a document whose stored totals
differ from its own by more than 0.00.

Examples:

    quantity 3, unit_price 0.335  -> net 1.005 -> 1.01
    net 54.625 (tax)               -> 54.63
    net 1.12, rate 0.19            -> tax 0.2128 -> 0.21

## 5. Tax categories

| category  | rate  | since      |
|-----------|-------|------------|
| goods     | 19%   | 2024-01-01 |
| services  | 19%   | 2024-01-01 |
| food      | 7%    | 2024-01-01 |
| books     | 7%    | 2025-07-01 |
| exempt    | 0%    | 2024-01-01 |

Unknown categories are rejected. Category names are lower-case.

## 6. Validation errors

The importer writes `<number>.errors.json` next to a rejected file, listing each problem
with a JSON pointer, e.g. `{"pointer": "/lines/2/tax", "problem": "expected 0.21, got 0.22"}`.
Common causes: banker's rounding (half even) instead of half up, fractional discounts
instead of absolute amounts, and missing `schema` or `currency` fields.

## 7. CSV variant (bulk corrections)

UTF-8 without a byte order mark, comma separated, header row, `\\n` or `\\r\\n` line
endings, fields quoted when they contain commas, quotes or line breaks. Columns:
`number, description, quantity, unit_price, category, net, tax`. One row per line; the
importer groups rows by `number`.

## 8. Contacts

Questions go to the finance systems team channel. Changes to this format are announced
one quarter ahead.
"""

FILES["docs/accounting-import-spec.md"] = SPEC
