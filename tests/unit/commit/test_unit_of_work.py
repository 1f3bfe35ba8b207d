"""UnitOfWork: wire format of each action and every error raised before DynamoDB is called."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

import pytest

from lambda_inbox import ConditionFailures, FailedCondition, UnitOfWork, UnitOfWorkError
from lambda_inbox._commit.actions import WriteAction
from lambda_inbox._commit.unit_of_work import MAX_HANDLER_ACTIONS

KEY = {"pk": "SKU#A", "sk": "STOCK"}


def test_put_serializes_item_key_condition_and_values() -> None:
    uow = UnitOfWork()
    uow.put(
        "domain",
        {"pk": "ORDER#1", "sk": "SHIPMENT", "qty": 3, "price": Decimal("1.5"), "tags": ["a"]},
        condition="attribute_not_exists(pk) AND #s <> :s",
        names={"#s": "status"},
        values={":s": "DONE"},
        label="shipment",
    )
    (action,) = uow.actions
    assert action.kind == "Put"
    assert action.label == "shipment"
    assert action.key == {"pk": {"S": "ORDER#1"}, "sk": {"S": "SHIPMENT"}}
    assert action.transact_item() == {
        "Put": {
            "TableName": "domain",
            "Item": {
                "pk": {"S": "ORDER#1"},
                "sk": {"S": "SHIPMENT"},
                "qty": {"N": "3"},
                "price": {"N": "1.5"},
                "tags": {"L": [{"S": "a"}]},
            },
            "ConditionExpression": "attribute_not_exists(pk) AND #s <> :s",
            "ExpressionAttributeNames": {"#s": "status"},
            "ExpressionAttributeValues": {":s": {"S": "DONE"}},
        }
    }
    assert action.size > 0


def test_update_serializes_key_expression_and_values() -> None:
    uow = UnitOfWork()
    uow.update(
        "domain",
        KEY,
        "SET available = available - :qty ADD reserved :qty",
        condition="available >= :qty",
        values={":qty": 2},
    )
    (action,) = uow.actions
    assert action.transact_item() == {
        "Update": {
            "TableName": "domain",
            "Key": {"pk": {"S": "SKU#A"}, "sk": {"S": "STOCK"}},
            "UpdateExpression": "SET available = available - :qty ADD reserved :qty",
            "ConditionExpression": "available >= :qty",
            "ExpressionAttributeValues": {":qty": {"N": "2"}},
        }
    }


def test_delete_and_condition_check_serialize() -> None:
    uow = UnitOfWork()
    uow.delete("domain", {"pk": "A", "sk": "1"}, condition="attribute_exists(pk)")
    uow.condition_check("domain", {"pk": "B", "sk": 7}, "attribute_not_exists(pk)", label="b")
    delete, check = uow.actions
    assert delete.transact_item() == {
        "Delete": {
            "TableName": "domain",
            "Key": {"pk": {"S": "A"}, "sk": {"S": "1"}},
            "ConditionExpression": "attribute_exists(pk)",
        }
    }
    assert check.transact_item() == {
        "ConditionCheck": {
            "TableName": "domain",
            "Key": {"pk": {"S": "B"}, "sk": {"N": "7"}},
            "ConditionExpression": "attribute_not_exists(pk)",
        }
    }
    assert check.label == "b"


def test_default_label_names_kind_table_and_key() -> None:
    uow = UnitOfWork()
    uow.update("domain", KEY, "ADD n :one", values={":one": 1})
    assert uow.actions[0].label == 'update:domain:{"pk": "SKU#A", "sk": "STOCK"}'


def test_custom_key_attributes_pick_the_key_of_a_put() -> None:
    uow = UnitOfWork(key_attributes=("id",))
    uow.put("t", {"id": "x", "pk": "ignored"})
    assert uow.actions[0].key == {"id": {"S": "x"}}


def test_float_value_is_rejected_with_a_decimal_hint() -> None:
    uow = UnitOfWork()
    with pytest.raises(UnitOfWorkError, match="Decimal") as raised:
        uow.put("domain", {"pk": "A", "sk": "B", "price": 1.5})
    assert "'price'" in str(raised.value)
    with pytest.raises(UnitOfWorkError, match="Decimal"):
        uow.update("domain", KEY, "SET p = :p", values={":p": 0.1})
    assert uow.actions == ()


def test_float_key_is_rejected() -> None:
    with pytest.raises(UnitOfWorkError, match="key attribute 'sk'"):
        UnitOfWork().update("domain", {"pk": "A", "sk": 1.5}, "ADD n :one", values={":one": 1})


def test_bool_key_is_rejected() -> None:
    with pytest.raises(UnitOfWorkError, match="string, number or bytes"):
        UnitOfWork().delete("domain", {"pk": True})


def test_attribute_names_that_are_not_strings_are_rejected_in_items_and_keys() -> None:
    uow = UnitOfWork()
    item: dict[Any, str] = {"pk": "A", "sk": "B", 7: "x"}  # a handler's typing slip
    key: dict[Any, str] = {"pk": "A", 7: "x"}
    with pytest.raises(UnitOfWorkError, match=r"put on domain: attribute name 7 is not a string"):
        uow.put("domain", item)
    with pytest.raises(
        UnitOfWorkError, match=r"delete on domain: attribute name 7 is not a string"
    ):
        uow.delete("domain", key)
    assert uow.actions == ()


def test_a_keys_unsized_value_is_named_as_a_key_attribute() -> None:
    with pytest.raises(UnitOfWorkError, match=r"delete on domain, key 'sk': .*UTF-8"):
        UnitOfWork().delete("domain", {"pk": "A", "sk": "\ud800"})


def test_undefined_value_placeholder() -> None:
    with pytest.raises(UnitOfWorkError, match=r"value placeholders not defined: \[':qty'\]"):
        UnitOfWork().update("domain", KEY, "ADD n :qty")


def test_undefined_name_placeholder() -> None:
    with pytest.raises(UnitOfWorkError, match=r"name placeholders not defined: \['#n'\]"):
        UnitOfWork().update("domain", KEY, "ADD #n :one", values={":one": 1})


def test_unused_value_placeholder() -> None:
    with pytest.raises(UnitOfWorkError, match=r"values defined but never used: \[':extra'\]"):
        UnitOfWork().update("domain", KEY, "ADD n :one", values={":one": 1, ":extra": 2})


def test_unused_name_placeholder() -> None:
    with pytest.raises(UnitOfWorkError, match=r"names defined but never used: \['#unused'\]"):
        UnitOfWork().put(
            "domain", {"pk": "A"}, condition="attribute_not_exists(pk)", names={"#unused": "x"}
        )


def test_placeholders_in_the_condition_count_as_used() -> None:
    uow = UnitOfWork()
    uow.update(
        "domain",
        KEY,
        "SET #a = :a",
        condition="#b < :b",
        names={"#a": "a", "#b": "b"},
        values={":a": 1, ":b": 2},
    )
    assert len(uow.actions) == 1


@pytest.mark.parametrize(
    ("names", "values", "bad"),
    [
        ({"#n": "n", "n2": "x"}, {":v": 1}, "'n2' is not a '#name' placeholder"),
        ({"#n": "n"}, {":v": 1, "v-2": 2}, "'v-2' is not a ':value' placeholder"),
    ],
)
def test_bad_placeholder_names(names: dict[str, str], values: dict[str, int], bad: str) -> None:
    with pytest.raises(UnitOfWorkError, match=bad):
        UnitOfWork().update("domain", KEY, "SET #n = :v", names=names, values=values)


def test_empty_key() -> None:
    with pytest.raises(UnitOfWorkError, match="the key is empty"):
        UnitOfWork().update("domain", {}, "ADD n :one", values={":one": 1})
    with pytest.raises(UnitOfWorkError, match="the key is empty"):
        UnitOfWork().condition_check("domain", {}, "attribute_exists(pk)")


def test_put_item_without_key_attributes() -> None:
    with pytest.raises(UnitOfWorkError, match="none of the key attributes"):
        UnitOfWork().put("domain", {"name": "no key"})


def test_empty_table_expression_and_condition() -> None:
    uow = UnitOfWork()
    with pytest.raises(UnitOfWorkError, match="table name is empty"):
        uow.put("", {"pk": "A"})
    with pytest.raises(UnitOfWorkError, match="update expression is empty"):
        uow.update("domain", KEY, "  ")
    with pytest.raises(UnitOfWorkError, match="the condition is empty"):
        uow.condition_check("domain", KEY, "")
    with pytest.raises(UnitOfWorkError, match="the condition is empty"):
        uow.put("domain", {"pk": "A"}, condition=" ")
    assert uow.actions == ()


def test_same_item_twice_is_rejected_whatever_the_action_kind() -> None:
    uow = UnitOfWork()
    uow.put("domain", {"pk": "SKU#A", "sk": "STOCK", "available": 1})
    with pytest.raises(UnitOfWorkError, match="already written by this message"):
        uow.update("domain", KEY, "ADD n :one", values={":one": 1})
    with pytest.raises(UnitOfWorkError, match="already written"):
        uow.condition_check("domain", dict(reversed(list(KEY.items()))), "attribute_exists(pk)")
    # Same key on another table is another item.
    uow.update("other", KEY, "ADD n :one", values={":one": 1})
    assert [action.table for action in uow.actions] == ["domain", "other"]


def test_distinct_keys_are_distinct_items_however_their_parts_run_together() -> None:
    """An item's identity is its table and its key's (name, value) pairs: keys whose parts would
    run together in a plain join stay distinct, and so do a number and a string, a string and
    bytes, a partition key alone and with a sort key."""
    uow = UnitOfWork()
    keys: list[dict[str, str | int | bytes]] = [
        {"pk": "a1:", "sk": "b"},
        {"pk": "a", "sk": "1:b"},
        {"pk": "a", "sk": 1},  # a number, not the string "1"
        {"pk": "a", "sk": "1"},
        {"pk": "a", "sk": b"1"},
        {"pk": "a", "s": "k"},
        {"pk": "a", "sk": "S1:k"},
        {"pk": "a"},
    ]
    for key in keys:
        uow.condition_check("domain", key, "attribute_exists(pk)")
    assert len({action.item_identity for action in uow.actions}) == len(keys)
    for key in keys:  # each one again, in the other attribute order: the same item
        with pytest.raises(UnitOfWorkError, match="already written by this message"):
            uow.update(
                "domain", dict(reversed(list(key.items()))), "ADD n :one", values={":one": 1}
            )


def test_a_number_is_one_item_whatever_its_python_type() -> None:
    """DynamoDB holds 1, Decimal("1") and Decimal("1.0") as one number, so as one key: a second
    action on it is refused here, not by DynamoDB at commit time."""
    uow = UnitOfWork()
    uow.update("domain", {"pk": "a", "sk": 1}, "ADD n :one", values={":one": 1})
    for same in (Decimal("1"), Decimal("1.0")):
        with pytest.raises(UnitOfWorkError, match="already written by this message"):
            uow.condition_check("domain", {"sk": same, "pk": "a"}, "attribute_exists(pk)")
    assert len(uow.actions) == 1


@pytest.mark.parametrize("value", [True, ["a"], {"a": "b"}, 1.5, None])
def test_a_put_whose_key_attribute_is_no_string_number_or_bytes_is_refused(value: Any) -> None:
    """DynamoDB keys are strings, numbers or bytes: a put's item says which, and anything else
    is refused when the handler writes it, as for the key of an update."""
    uow = UnitOfWork()
    with pytest.raises(UnitOfWorkError, match="put on domain: key attribute 'sk' must be"):
        uow.put("domain", {"pk": "A", "sk": value, "n": 1})
    assert uow.actions == ()


def test_at_most_99_actions() -> None:
    uow = UnitOfWork()
    for index in range(MAX_HANDLER_ACTIONS):
        uow.condition_check("domain", {"pk": f"P{index}"}, "attribute_exists(pk)")
    assert MAX_HANDLER_ACTIONS == 99
    with pytest.raises(UnitOfWorkError, match="at most 99 items"):
        uow.condition_check("domain", {"pk": "one-too-many"}, "attribute_exists(pk)")
    assert len(uow.actions) == 99


def test_item_over_400_kb() -> None:
    uow = UnitOfWork()
    uow.put("domain", {"pk": "ok", "blob": "x" * (399 * 1024)})
    with pytest.raises(UnitOfWorkError, match="DynamoDB allows 409600"):
        uow.put("domain", {"pk": "big", "blob": "x" * (400 * 1024)})
    assert len(uow.actions) == 1


def test_total_over_4_mb() -> None:
    uow = UnitOfWork()
    blob = b"x" * (390 * 1024)
    for index in range(10):
        uow.put("domain", {"pk": f"P{index}", "blob": blob})
    with pytest.raises(UnitOfWorkError, match="exceed 4 MB"):
        uow.put("domain", {"pk": "P10", "blob": blob})
    assert len(uow.actions) == 10


def test_set_result_accepts_json_and_rejects_non_json() -> None:
    uow = UnitOfWork()
    uow.set_result(outcome="reserved", skus=["A"], count=2)
    uow.set_result(total=Decimal("1.5"))  # default=str: stored as text
    assert uow.result == {"outcome": "reserved", "skus": ["A"], "count": 2, "total": Decimal("1.5")}
    circular: list[object] = []
    circular.append(circular)
    with pytest.raises(UnitOfWorkError, match="not JSON-serializable"):
        uow.set_result(loop=circular)
    with pytest.raises(UnitOfWorkError, match="not JSON-serializable"):
        uow.set_result(bad={("tuple", "key"): 1})
    assert "loop" not in uow.result and "bad" not in uow.result
    json.dumps(uow.result, default=str)


def _failures(*labels: str) -> ConditionFailures:
    uow = UnitOfWork()
    for index, label in enumerate(labels):
        uow.condition_check("domain", {"pk": f"P{index}"}, "attribute_exists(pk)", label=label)
    return ConditionFailures(
        tuple(FailedCondition(action, {"pk": action.label}) for action in uow.actions)
    )


def test_condition_failures_helpers() -> None:
    failures = _failures("stock:SKU-A", "stock:SKU-B", "shipment")
    assert failures.labels == frozenset({"stock:SKU-A", "stock:SKU-B", "shipment"})
    assert "shipment" in failures
    assert "rejection" not in failures
    assert failures.any_startswith("stock:")
    assert not failures.any_startswith("payment:")
    listed = list(failures)
    assert [failure.label for failure in listed] == ["stock:SKU-A", "stock:SKU-B", "shipment"]
    assert all(isinstance(failure.action, WriteAction) for failure in listed)
    assert listed[2].item == {"pk": "shipment"}
    assert _failures().labels == frozenset()


@pytest.mark.parametrize(
    "key",
    [
        {"pk": "a", "sk": "b"},
        {"sk": "b", "pk": "a"},
        {"pk": "a", "sk": 1},
        {"sk": Decimal("1.0"), "pk": b"a"},
        {"pk": "a"},
        {"pk": "a", "sk": "b", "lsi": "c"},
    ],
)
def test_an_actions_item_identity_is_its_table_and_key_whatever_the_order(
    key: dict[str, Any],
) -> None:
    """An action's identity (inlined for a key of two attributes) names its table and key,
    whatever the attributes' order: the same item in any order is one item, another table or
    another value is another."""

    def identity(table: str, key: dict[str, Any]) -> object:
        uow = UnitOfWork()
        uow.condition_check(table, key, "attribute_exists(pk)")
        (action,) = uow.actions
        return action.item_identity

    assert identity("domain", key) == identity("domain", dict(reversed(list(key.items()))))
    assert identity("domain", key) != identity("other", key)
    assert identity("domain", key) != identity("domain", {**key, "pk": "another"})
