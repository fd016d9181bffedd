"""An operation's plan: the fields to resolve on each object type, and how to complete them.

Built from graphql-core's schema (``field.resolve``; default attribute resolution when it is
None), never from Strawberry's type objects, so it follows whatever the types declare. The
plan covers queries over objects, lists, enums, scalars, ``__typename``, aliases, fragments
and inline fragments, interfaces and unions (through their ``resolve_type``), and
``@skip``/``@include``; for anything else (mutations, subscriptions, introspection, other
directives, fragment variables) ``compile_operation`` raises ``Unsupported`` and
graphql-core executes the operation.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import Enum, IntEnum
from operator import attrgetter
from typing import Any

from graphql import (
    FieldNode,
    FragmentDefinitionNode,
    GraphQLBoolean,
    GraphQLEnumType,
    GraphQLError,
    GraphQLField,
    GraphQLID,
    GraphQLIncludeDirective,
    GraphQLInterfaceType,
    GraphQLLeafType,
    GraphQLList,
    GraphQLObjectType,
    GraphQLOutputType,
    GraphQLSchema,
    GraphQLSkipDirective,
    GraphQLString,
    OperationDefinitionNode,
    OperationType,
    SelectionSetNode,
    VariableNode,
    is_abstract_type,
    is_leaf_type,
    is_list_type,
    is_non_null_type,
    is_object_type,
)
from graphql.execution.collect_fields import FieldDetails
from graphql.execution.values import VariableValues, get_argument_values
from strawberry.resolvers import is_default_resolver
from strawberry.schema.schema_converter import GraphQLCoreConverter
from strawberry.types.base import StrawberryObjectDefinition

from graphql_api.execution.fields import (
    KnownId,
    Load,
    Prefetch,
    known_id_of,
    load_of,
    prefetch_of,
    read_of,
    strawberry_field,
)
from graphql_api.execution.selection import Selections

_CONDITIONS = (GraphQLSkipDirective.name, GraphQLIncludeDirective.name)


class Unsupported(Exception):
    """The operation uses something plans do not cover: graphql-core runs it."""


class CompletionKind(IntEnum):
    LEAF = 0
    LIST = 1
    OBJECT = 2
    ABSTRACT = 3


@dataclass(slots=True, eq=False)
class Completion:
    """How a value of one (possibly wrapped) output type becomes its response value."""

    kind: CompletionKind
    nullable: bool
    type: Any  # the named or list type under the non-null wrapper
    item: Completion | None = None  # LIST
    leaf_output: Callable[[Any], Any] | None = None  # LEAF: coerce_output_value
    # LEAF: the Python type whose values are their own output (a ``str`` for a String or an
    # ID, a ``bool`` for a Boolean: graphql-core's coercion returns them as they are).
    passthrough: builtins.type | None = None
    plan: ObjectPlan | None = None  # OBJECT
    plans: dict[str, ObjectPlan] = field(default_factory=dict)  # ABSTRACT: by runtime type name
    # ABSTRACT, for an interface Strawberry resolves itself: the plan of each possible type by
    # the Python class Strawberry names it by (``_resolved_by_class``). None: always resolve.
    by_class: dict[builtins.type, ObjectPlan] | None = None


@dataclass(slots=True, eq=False)
class FieldPlan:
    key: str  # the response key (alias or name)
    name: str
    parent: GraphQLObjectType
    definition: GraphQLField | None  # None for __typename
    nodes: list[FieldNode]
    details: list[FieldDetails]
    resolve: Callable[..., Any] | None
    # The resolver Strawberry makes for a field without one of its own (``is_default_resolver``)
    # reads the attribute and ignores its info, so no GraphQLResolveInfo need be built for it.
    info_free: bool
    # For such a field, the attribute read itself (one C call instead of Strawberry's three
    # Python calls), when the field declares that it only reads that attribute with getattr.
    read: Callable[[Any], Any] | None
    # For a field with a resolver of its own, its declared read from the source (fields.read),
    # tried first: no GraphQLResolveInfo and no Strawberry wrapper unless it says USE_RESOLVER.
    preread: Callable[[Any], Any] | None
    # For a field declared by its synchronous load (fields.loaded), that load.
    load: Load | None
    # Coerced arguments when they use no variable; None when they are coerced per request.
    arguments: dict[str, Any] | None
    completion: Completion | None  # None for __typename
    # The completion's ``passthrough`` (a value of exactly this type is its own output).
    passthrough: type | None = None
    # For a loaded root field whose object's id is known before its read (fields.loaded's
    # ``known_id``): that id, and the fields selected on the object that declare a prefetch
    # (fields.prefetch), whose reads then go out in this field's own wave.
    known_id: KnownId | None = None
    prefetches: tuple[tuple[FieldPlan, Prefetch], ...] = ()


@dataclass(slots=True, eq=False)
class ObjectPlan:
    type: GraphQLObjectType
    fields: list[FieldPlan]
    # False when the type's ``is_type_of`` is Strawberry's own, which never reads its info:
    # then no GraphQLResolveInfo is built for each object of the type (one per node of a page).
    type_check_reads_info: bool = True
    # With Strawberry's own ``is_type_of``, the Python class it declares the type with: an
    # instance of exactly that class, not cast (``strawberry.cast``), is of the type, which
    # the runner knows without calling the check (tests/.../test_library_internals.py).
    origin: builtins.type | None = None


@dataclass(slots=True, eq=False)
class CompiledPlan:
    root: ObjectPlan


def _require_supported(operation: OperationDefinitionNode, fragments: Mapping[str, FragmentDefinitionNode]) -> None:
    """Unsupported for a directive other than @skip/@include, or a fragment with variables."""

    def visit(selection_set: SelectionSetNode | None) -> None:
        for selection in () if selection_set is None else selection_set.selections:
            for directive in selection.directives or ():
                if directive.name.value not in _CONDITIONS:
                    raise Unsupported(f"directive @{directive.name.value}")
            visit(getattr(selection, "selection_set", None))

    if operation.directives:
        raise Unsupported("operation directives")
    visit(operation.selection_set)
    for fragment in fragments.values():
        if fragment.variable_definitions:
            raise Unsupported("fragment variables")
        visit(fragment.selection_set)


class _Compiler:
    def __init__(
        self,
        schema: GraphQLSchema,
        fragments: Mapping[str, FragmentDefinitionNode],
        variables: VariableValues,
    ) -> None:
        self.schema = schema
        self.selections = Selections(fragments, variables.coerced)
        self.memo: dict[tuple[str, tuple[int, ...]], ObjectPlan] = {}

    def object_plan(self, runtime: GraphQLObjectType, selection_sets: list[SelectionSetNode]) -> ObjectPlan:
        key = (runtime.name, tuple(id(s) for s in selection_sets))
        found = self.memo.get(key)
        if found is not None:
            return found
        origin = _strawberry_type_check(runtime)
        plan = ObjectPlan(runtime, [], type_check_reads_info=origin is None, origin=origin)
        self.memo[key] = plan  # before the fields: a type may select itself further down
        grouped: dict[str, list[FieldNode]] = {}
        for node, _on in self.selections.fields(selection_sets, lambda condition: self.matches(condition, runtime)):
            grouped.setdefault(node.alias.value if node.alias else node.name.value, []).append(node)
        plan.fields = [self.field_plan(runtime, response_key, nodes) for response_key, nodes in grouped.items()]
        return plan

    def matches(self, condition_name: str, runtime: GraphQLObjectType) -> bool:
        conditional = self.schema.get_type(condition_name)
        if conditional is runtime:
            return True
        if conditional is not None and is_abstract_type(conditional):
            return self.schema.is_sub_type(conditional, runtime)
        return False

    def field_plan(self, parent: GraphQLObjectType, response_key: str, nodes: list[FieldNode]) -> FieldPlan:
        name = nodes[0].name.value
        details = [FieldDetails(node, None) for node in nodes]
        if name == "__typename":
            return FieldPlan(response_key, name, parent, None, nodes, details, None, True, None, None, None, {}, None)
        if name.startswith("__"):
            raise Unsupported("introspection")
        definition = parent.fields.get(name)
        if definition is None:
            raise Unsupported(f"unknown field {parent.name}.{name}")
        node = nodes[0]
        if not definition.args and not node.arguments:
            arguments: dict[str, Any] | None = {}
        elif _uses_variables(node):
            arguments = None
        else:
            arguments = get_argument_values(definition, node)
        resolve = definition.resolve
        info_free = resolve is not None and is_default_resolver(resolve)
        read = _attribute_read(definition) if info_free else None
        preread = None if info_free or definition.args else read_of(definition)
        load = None if info_free else load_of(definition)
        sub_selections = [n.selection_set for n in nodes if n.selection_set is not None]
        completion = self.completion(definition.type, sub_selections)
        known_id = None if load is None else known_id_of(definition)
        prefetches = () if known_id is None else _prefetches(completion)
        return FieldPlan(
            response_key,
            name,
            parent,
            definition,
            nodes,
            details,
            resolve,
            info_free,
            read,
            preread,
            load,
            arguments,
            completion,
            completion.passthrough,
            known_id=known_id if prefetches else None,
            prefetches=prefetches,
        )

    def completion(self, output: GraphQLOutputType, selections: list[SelectionSetNode]) -> Completion:
        nullable = True
        if is_non_null_type(output):
            nullable = False
            output = output.of_type
        if is_list_type(output):
            assert isinstance(output, GraphQLList)
            return Completion(CompletionKind.LIST, nullable, output, item=self.completion(output.of_type, selections))
        if is_leaf_type(output):
            assert isinstance(output, GraphQLLeafType)
            coerce = _enum_output(output) if isinstance(output, GraphQLEnumType) else output.coerce_output_value
            return Completion(
                CompletionKind.LEAF, nullable, output, leaf_output=coerce, passthrough=_passthrough(coerce)
            )
        if is_object_type(output):
            assert isinstance(output, GraphQLObjectType)
            return Completion(CompletionKind.OBJECT, nullable, output, plan=self.object_plan(output, selections))
        if is_abstract_type(output):
            possible = self.schema.get_possible_types(output)
            plans = {runtime.name: self.object_plan(runtime, selections) for runtime in possible}
            return Completion(
                CompletionKind.ABSTRACT, nullable, output, plans=plans, by_class=_resolved_by_class(output, plans)
            )
        raise Unsupported(f"output type {output}")  # pragma: no cover - every output type is above


def _prefetches(completion: Completion) -> tuple[tuple[FieldPlan, Prefetch], ...]:
    """The fields of an object completion that declare a prefetch, each with it."""
    if completion.kind is not CompletionKind.OBJECT:
        return ()
    plan: ObjectPlan = completion.plan  # type: ignore[assignment]  # OBJECT has it
    declared = ((field, prefetch_of(field.definition)) for field in plan.fields if field.definition is not None)
    return tuple((field, prefetch) for field, prefetch in declared if prefetch is not None)


def _definition(declared_type: GraphQLObjectType | GraphQLInterfaceType) -> StrawberryObjectDefinition | None:
    """The Strawberry definition a graphql-core object type or interface was made from; None
    for one Strawberry did not make."""
    declared = (declared_type.extensions or {}).get(GraphQLCoreConverter.DEFINITION_BACKREF)
    return declared if isinstance(declared, StrawberryObjectDefinition) else None


def _strawberry_type_check(runtime: GraphQLObjectType) -> type | None:
    """The Python class ``runtime`` is declared with, when its ``is_type_of`` is the one
    Strawberry gives an object type with interfaces that declares none of its own: a check of
    the value's Python type that never reads its info, and that passes an instance of exactly
    that class which was not cast (tests/graphql_api/execution/test_library_internals.py
    holds it to both). None for any other check, or none."""
    if runtime.is_type_of is None:
        return None
    declared = _definition(runtime)
    if declared is not None and declared.is_type_of is None:
        return declared.origin
    return None


def _resolved_by_class(abstract: Any, plans: Mapping[str, ObjectPlan]) -> dict[type, ObjectPlan] | None:
    """For an interface whose ``resolve_type`` is the one Strawberry gives an interface that
    declares none of its own: the plan of each possible type by its Python class. Strawberry's
    resolver names a value that was not cast by its class's definition when the class subclasses
    the interface's and is not generic, so an uncast instance of exactly such a class is of that
    type; the runner then builds no resolve info and calls neither the resolver nor graphql-core's
    check of its answer (tests/graphql_api/execution/test_library_internals.py holds Strawberry's
    resolver to this, type by type). None for a union, or an interface with its own resolver."""
    if not isinstance(abstract, GraphQLInterfaceType):
        return None
    interface = _definition(abstract)
    if interface is None or interface.resolve_type is not None:
        return None
    found: dict[type, ObjectPlan] = {}
    for name, plan in plans.items():
        declared = _definition(plan.type)
        if (
            declared is not None
            and declared.name == name
            and not declared.is_graphql_generic
            and issubclass(declared.origin, interface.origin)
        ):
            found[declared.origin] = plan
    return found or None


# graphql-core's output coercions that give a value of this exact type back as it is.
_PASSTHROUGH: dict[Any, type] = {
    GraphQLString.coerce_output_value: str,
    GraphQLID.coerce_output_value: str,
    GraphQLBoolean.coerce_output_value: bool,
}


def _passthrough(coerce: Callable[[Any], Any] | None) -> type | None:
    """The type whose values ``coerce`` returns unchanged (graphql-core's String, ID, Boolean)."""
    return _PASSTHROUGH.get(coerce)


def _enum_output(enum: GraphQLEnumType) -> Callable[[Any], Any]:
    """The enum's output coercion, with a dict lookup first for a plain ``str`` or a member.

    Strawberry's enum type checks each value against its Python enum before graphql-core's
    own lookup of the same dict; our enums' coercion (types/scalars.py ``fast_enum_output``)
    looks a member up in a dict of its own, a call in a call. Here a ``str`` value's name is
    found in the enum's values and a member's (of exactly the Python enum the type wraps) in
    what the type's own coercion answers for each member, asked once; anything else (an
    unknown value, another type) goes through the type's own coercion, errors included.
    """
    names = {value.value: name for name, value in enum.values.items() if type(value.value) is str}
    coerce = enum.coerce_output_value
    by_type: dict[type, dict[Any, str]] = {str: names}
    wrapped = getattr(enum, "wrapped_cls", None)  # Strawberry's: the Python enum it was made from
    if isinstance(wrapped, type) and issubclass(wrapped, Enum):
        members: dict[Any, str] = {}
        for member in wrapped:
            try:
                name = coerce(member)
            except GraphQLError:
                continue
            if type(name) is str:
                members[member] = name
        by_type[wrapped] = members

    def output(value: Any) -> Any:
        found = by_type.get(type(value))
        if found is not None:
            name = found.get(value)
            if name is not None:
                return name
        return coerce(value)

    return output


def _attribute_read(definition: GraphQLField) -> Callable[[Any], Any] | None:
    """``attrgetter(name)`` when the field's resolver is exactly ``getattr(source, name)``.

    Strawberry's resolver for a field without a resolver of its own calls its
    ``default_resolver`` (``getattr`` unless configured otherwise) with the field's Python
    name; the field is found on the GraphQL field's extensions. Anything else: None, and
    the resolver itself is called.
    """
    declared = strawberry_field(definition)
    if declared is None or declared.base_resolver is not None:
        return None
    if declared.default_resolver is not getattr or declared.extensions:
        return None
    name = declared.python_name
    return attrgetter(name) if isinstance(name, str) else None


def _uses_variables(node: FieldNode) -> bool:
    found = False

    def visit(value: Any) -> None:
        nonlocal found
        if isinstance(value, VariableNode):
            found = True
        for child in getattr(value, "values", None) or ():
            visit(child)
        for child in getattr(value, "fields", None) or ():
            visit(child.value)

    for argument in node.arguments or ():
        visit(argument.value)
    return found


def compile_operation(
    schema: GraphQLSchema,
    operation: OperationDefinitionNode,
    fragments: Mapping[str, FragmentDefinitionNode],
    variables: VariableValues,
) -> CompiledPlan:
    """The plan of a query; ``variables`` (coerced) decide its @skip/@include only."""
    if operation.operation is not OperationType.QUERY:
        raise Unsupported(operation.operation.value)
    _require_supported(operation, fragments)
    root = schema.query_type
    if root is None:  # pragma: no cover - our schema has a query root
        raise Unsupported("no query root")
    compiler = _Compiler(schema, fragments, variables)
    return CompiledPlan(compiler.object_plan(root, [operation.selection_set]))


__all__ = [
    "CompiledPlan",
    "Completion",
    "CompletionKind",
    "FieldPlan",
    "ObjectPlan",
    "Unsupported",
    "compile_operation",
]
