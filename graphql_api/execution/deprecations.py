"""What of the schema marked ``@deprecated`` a document selects: fields, arguments, input
fields and enum values, each named as schema coordinates (``Type.field``, ``Type.field(arg:)``,
``Input.field``, ``Enum.VALUE``).

Read from the document alone, once per document (execution/documents.py keeps it): the
server counts what each operation selects (observability/metrics.py), and ``schema-check``
lists what each client's stored documents still select (schema/evolution.py). An enum value
sent in a variable is the client's data, not its document, and is not seen here; a selection
under ``@skip``/``@include`` counts, since the client may send it.
"""

from __future__ import annotations

from typing import Any

from graphql import (
    DocumentNode,
    EnumValueNode,
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    GraphQLEnumType,
    GraphQLInputObjectType,
    GraphQLInterfaceType,
    GraphQLObjectType,
    GraphQLSchema,
    ObjectFieldNode,
    OperationDefinitionNode,
    TypeInfo,
    TypeInfoVisitor,
    Visitor,
    get_named_type,
    is_introspection_type,
    visit,
)
from graphql.language import ArgumentNode


def deprecated_selections(
    schema: GraphQLSchema, document: DocumentNode, operation_name: str | None = None
) -> tuple[str, ...]:
    """The deprecated members ``document`` uses, sorted: in the operation named
    ``operation_name`` and the fragments it spreads, or in every operation when it is None."""
    definitions = _reached(document, operation_name)
    if not definitions:
        return ()
    info = TypeInfo(schema)
    collector = _Collector(info)
    for definition in definitions:
        visit(definition, TypeInfoVisitor(info, collector))
    return tuple(sorted(collector.found))


def _reached(document: DocumentNode, operation_name: str | None) -> list[Any]:
    """The operation(s) and, transitively, the fragments they spread."""
    fragments = {d.name.value: d for d in document.definitions if isinstance(d, FragmentDefinitionNode)}
    operations = [
        d
        for d in document.definitions
        if isinstance(d, OperationDefinitionNode)
        and (operation_name is None or (d.name is not None and d.name.value == operation_name))
    ]
    if not operations:
        return []  # a name the document lacks selects nothing
    reached: list[Any] = list(operations)
    seen: set[str] = set()
    pending: list[OperationDefinitionNode | FragmentDefinitionNode] = list(operations)
    while pending:
        node = pending.pop()
        for spread in _spreads(node):
            if spread not in seen and spread in fragments:
                seen.add(spread)
                reached.append(fragments[spread])
                pending.append(fragments[spread])
    return reached


def _spreads(node: Any) -> list[str]:
    names: list[str] = []

    class Spreads(Visitor):
        def enter_fragment_spread(self, spread: FragmentSpreadNode, *_: Any) -> None:
            names.append(spread.name.value)

    visit(node, Spreads())
    return names


class _Collector(Visitor):
    def __init__(self, info: TypeInfo) -> None:
        super().__init__()
        self.info = info
        self.found: set[str] = set()
        self.fields: list[str] = []

    def enter_field(self, node: FieldNode, *_: Any) -> None:
        field = self.info.get_field_def()
        parent = self.info.get_parent_type()
        # The field whose arguments are visited next (TypeInfo knows its definition, not its name).
        self.fields.append(f"{getattr(parent, 'name', '?')}.{node.name.value}")
        if field is not None and parent is not None and field.deprecation_reason is not None:
            self.found.add(self.fields[-1])

    def leave_field(self, *_: Any) -> None:
        self.fields.pop()

    def enter_argument(self, node: ArgumentNode, *_: Any) -> None:
        argument = self.info.get_argument()
        if argument is not None and argument.deprecation_reason is not None and self.fields:
            self.found.add(f"{self.fields[-1]}({node.name.value}:)")

    def enter_object_field(self, node: ObjectFieldNode, *_: Any) -> None:
        parent = get_named_type(self.info.get_parent_input_type())
        if isinstance(parent, GraphQLInputObjectType):
            field = parent.fields.get(node.name.value)
            if field is not None and field.deprecation_reason is not None:
                self.found.add(f"{parent.name}.{node.name.value}")

    def enter_enum_value(self, node: EnumValueNode, *_: Any) -> None:
        kind = get_named_type(self.info.get_input_type())
        if isinstance(kind, GraphQLEnumType):
            value = kind.values.get(node.value)
            if value is not None and value.deprecation_reason is not None:
                self.found.add(f"{kind.name}.{node.value}")


def deprecated_members(schema: GraphQLSchema) -> dict[str, str]:
    """Every member of ``schema`` marked ``@deprecated``, by coordinate, with its reason."""
    members: dict[str, str] = {}
    for name, kind in schema.type_map.items():
        if is_introspection_type(kind):
            continue
        if isinstance(kind, GraphQLObjectType | GraphQLInterfaceType):
            for field_name, field in kind.fields.items():
                if field.deprecation_reason is not None:
                    members[f"{name}.{field_name}"] = field.deprecation_reason
                for arg_name, arg in field.args.items():
                    if arg.deprecation_reason is not None:
                        members[f"{name}.{field_name}({arg_name}:)"] = arg.deprecation_reason
        elif isinstance(kind, GraphQLInputObjectType):
            for field_name, input_field in kind.fields.items():
                if input_field.deprecation_reason is not None:
                    members[f"{name}.{field_name}"] = input_field.deprecation_reason
        elif isinstance(kind, GraphQLEnumType):
            for value_name, value in kind.values.items():
                if value.deprecation_reason is not None:
                    members[f"{name}.{value_name}"] = value.deprecation_reason
    return dict(sorted(members.items()))
