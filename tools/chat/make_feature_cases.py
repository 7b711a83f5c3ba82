#!/usr/bin/env python3
"""Expected outputs for the chat-template language-feature unit tests (tests/unit/chat/feature_cases.json).

Each case is a small template plus a context. The expected text (or the fact that it raises) comes from
jinja2 itself, configured as transformers configures it (ImmutableSandboxedEnvironment, trim_blocks,
lstrip_blocks, loop controls, {% generation %}, transformers' tojson, raise_exception, strftime_now
pinned to 2025-03-14 09:26:53) — so the unit tests check the renderer against the real semantics, not
against what we believe them to be.

  python3 tools/chat/make_feature_cases.py --out tests/unit/chat/feature_cases.json
  python3 tools/chat/make_feature_cases.py --cli build/apps/cli/inferdesk-cli   # compare directly
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

MSGS = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hello!"}, {"role": "user", "content": "Bye"}]

# (name, template, context)
CASES = [
    # ---- literals and printing (Python str() of values)
    ("print_scalars", "{{ true }} {{ false }} {{ none }} {{ 1 }} {{ -3 }} {{ 1.0 }} {{ 0.1 }} {{ 2.50 }}", {}),
    ("print_floats", "{{ 1e-5 }} {{ 1e16 }} {{ 1e15 }} {{ 123456789.125 }} {{ 1/3 }} {{ 10/5 }} {{ 0.1 + 0.2 }}", {}),
    ("print_containers", "{{ [1, 'a', none, true, 1.5] }} {{ {'k': 'v', 'n': [1, 2]} }} {{ (1,) }} {{ (1, 'x') }}", {}),
    ("print_repr_quotes", "{{ [\"it's\", 'say \"hi\"', 'both \\' \"', 'tab\\there', 'nl\\n'] }}", {}),
    ("print_repr_unicode", "{{ ['é', '你好', 'a\\u200db', '\\x7f'] }}", {}),
    ("print_context_values", "{{ d }} {{ l }} {{ f }} {{ b }} {{ n }}",
     {"d": {"b": 1, "a": [True, None]}, "l": [1.0, 2.5e-7], "f": 3.0, "b": False, "n": None}),
    ("string_escapes", "{{ 'a\\nb\\tc\\\\d\\'e\\\"f\\x41\\u00e9\\U0001F600\\101\\q' }}", {}),
    ("adjacent_strings", "{{ 'a' 'b' \"c\" }}", {}),
    ("int_literals", "{{ 1_000 }} {{ 0x1F }} {{ 0o17 }} {{ 0b101 }} {{ 1_0.5 }} {{ 2e3 }}", {}),
    # ---- operators
    ("arith_int", "{{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }} {{ 7 % -3 }} {{ 2 ** 10 }} {{ 2 ** -1 }}", {}),
    ("arith_float", "{{ 1 / 2 }} {{ 7.5 // 2 }} {{ -7.5 % 2 }} {{ 1 + 2.0 }} {{ 3 * 1.5 }} {{ 2 - 0.5 }}", {}),
    ("arith_bool", "{{ true + 1 }} {{ true * 3 }} {{ false - 1 }}", {}),
    ("arith_seq", "{{ 'ab' * 3 }} {{ 3 * 'x' }} {{ [1] * 2 }} {{ [1] + [2] }} {{ 'a' + 'b' }} {{ 'x' * 0 }}", {}),
    ("unary", "{{ -(3) }} {{ +2 }} {{ -1.5 }} {{ - -2 }} {{ -x|abs }}", {"x": 4}),
    ("tilde_concat", "{{ 'a' ~ 1 ~ none ~ true ~ 1.0 ~ [1] ~ undefined_var ~ 'z' }}", {}),
    ("precedence_math", "{{ 1 + 2 * 3 }} {{ (1 + 2) * 3 }} {{ 2 ** 3 ** 2 }} {{ -2 ** 2 }} {{ 1 + 2 ~ 3 * 2 }}", {}),
    ("compare_chain", "{{ 1 < 2 < 3 }} {{ 3 > 2 > 2 }} {{ 1 == 1.0 }} {{ true == 1 }} {{ 'a' < 'b' }} {{ [1, 2] < [1, 3] }}", {}),
    ("compare_eq_types", "{{ none == none }} {{ [1, 2] == [1, 2] }} {{ {'a': 1} == {'a': 1} }} {{ (1,) == [1] }} {{ '1' == 1 }}", {}),
    ("in_operator", "{{ 'b' in 'abc' }} {{ 2 in [1, 2] }} {{ 'k' in {'k': 1} }} {{ 3 not in [1] }} {{ 'x' not in 'abc' }}", {}),
    ("in_undefined", "{{ 1 in nothing }} {{ nothing in [1] }}", {}),
    ("logic_values", "{{ 0 or 'x' }} {{ 'a' and 'b' }} {{ '' and 'b' }} {{ none or [] }} {{ not 0 }} {{ not 'a' }}", {}),
    ("logic_precedence", "{{ not a and b }} {{ a or b and c }} {{ not a == b }} {{ a and not b or c }}",
     {"a": False, "b": True, "c": False}),
    ("is_not_precedence", "{{ x is not none }} {{ not x is defined }} {{ x is defined and y is undefined }} {{ x is number and x > 1 }}",
     {"x": 5}),
    ("inline_if", "{{ 'y' if x else 'n' }} {{ 'y' if not x else 'n' if z else 'm' }} [{{ 'only' if false }}]", {"x": 1, "z": 0}),
    ("inline_if_in_filter_arg", "{{ items | join(', ' if sep is undefined else sep) }}", {"items": ["a", "b"]}),
    # ---- undefined
    ("undefined_print", "[{{ missing }}][{{ d.missing }}][{{ d['missing'] }}][{{ l[5] }}][{{ missing | length }}]",
     {"d": {"a": 1}, "l": [1]}),
    ("undefined_tests", "{{ missing is defined }} {{ d.missing is defined }} {{ d.a is defined }} {{ missing is undefined }}",
     {"d": {"a": 1}}),
    ("undefined_attr_of_undefined", "{{ missing.attr }}", {}),
    ("undefined_in_for", "{% for x in missing %}{{ x }}{% else %}empty{% endfor %}", {}),
    ("none_attr", "[{{ n.attr }}][{{ n.attr is defined }}]", {"n": None}),
    ("undefined_arith", "{{ missing + 1 }}", {}),
    ("undefined_compare_eq", "{{ missing == missing2 }} {{ missing == none }}", {}),
    # ---- attribute and item access
    ("getattr_getitem", "{{ m.role }} {{ m['content'] }} {{ l[0] }} {{ l[-1] }} {{ l.1 }} {{ s[1] }} {{ s[-1] }}",
     {"m": {"role": "user", "content": "hi"}, "l": [10, 20], "s": "héllo"}),
    ("dict_method_shadowing", "{{ d.items is defined }} {{ d['items'] }} {{ d.keys() | list }}", {"d": {"items": 5, "a": 1}}),
    ("slicing", "{{ l[1:] }} {{ l[:-1] }} {{ l[::-1] }} {{ l[::2] }} {{ l[-2:] }} {{ l[1:3] }} {{ l[5:] }} {{ l[:100] }}",
     {"l": [1, 2, 3, 4, 5]}),
    ("slicing_str", "{{ s[1:3] }}|{{ s[::-1] }}|{{ s[-2:] }}|{{ s[:1] }}|{{ s[::2] }}", {"s": "añb€c"}),
    ("slicing_step_negative", "{{ l[3:0:-1] }} {{ l[-1:-4:-2] }} {{ 'abcdef'[4:1:-2] }}", {"l": [0, 1, 2, 3, 4]}),
    ("messages_slice", "{% for m in messages[1:] %}{{ m.role }},{% endfor %}", {"messages": MSGS}),
    # ---- statements
    ("if_elif_else", "{% for x in [1, 2, 3] %}{% if x == 1 %}one{% elif x == 2 %}two{% else %}many{% endif %} {% endfor %}", {}),
    ("for_loop_vars", "{% for x in 'abc' %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 }}"
     "{{ loop.first }}{{ loop.last }}{{ loop.length }};{% endfor %}", {}),
    ("for_prev_next", "{% for x in [1, 2, 3] %}[{{ loop.previtem }}|{{ loop.nextitem }}]{% endfor %}", {}),
    ("for_cycle", "{% for x in range(5) %}{{ loop.cycle('a', 'b') }}{% endfor %}", {}),
    ("for_else", "{% for x in [] %}x{% else %}none{% endfor %}{% for x in [1] %}{{ x }}{% else %}none{% endfor %}", {}),
    ("for_dict", "{% for k in d %}{{ k }}={{ d[k] }};{% endfor %}{% for k, v in d.items() %}{{ k }}:{{ v }};{% endfor %}",
     {"d": {"z": 1, "a": 2, "m": 3}}),
    ("for_items_filter", "{% for k, v in d | items %}{{ k }}{{ v }}{% endfor %}|{% for k, v in d | dictsort %}{{ k }}{% endfor %}",
     {"d": {"b": 1, "A": 2, "c": 3}}),
    ("for_filter_clause", "{% for m in messages if m.role != 'system' %}{{ loop.index }}{{ m.role[0] }}{{ loop.length }} {% endfor %}",
     {"messages": MSGS}),
    ("for_break_continue", "{% for x in range(10) %}{% if x == 2 %}{% continue %}{% endif %}{% if x == 5 %}{% break %}{% endif %}{{ x }}{% endfor %}", {}),
    ("for_nested_loop_var", "{% for a in [1, 2] %}{% for b in [1, 2] %}{{ loop.index }}{% endfor %}{{ loop.index }}|{% endfor %}", {}),
    ("for_unpack_tuples", "{% for a, b in [(1, 2), [3, 4]] %}{{ a + b }} {% endfor %}", {}),
    ("for_string_chars", "{% for c in 'añ😀' %}<{{ c }}>{% endfor %}", {}),
    ("for_over_none", "{% for x in n %}{{ x }}{% endfor %}", {"n": None}),
    ("for_recursive", "{% for item in tree recursive %}{{ item.name }}{% if item.children %}({{ loop(item.children) }}){% endif %}{% endfor %}",
     {"tree": [{"name": "a", "children": [{"name": "b", "children": []}, {"name": "c"}]}, {"name": "d"}]}),
    ("loop_changed", "{% for x in [1, 1, 2, 2, 3] %}{% if loop.changed(x) %}{{ x }}{% endif %}{% endfor %}", {}),
    ("scope_loop_set", "{% set x = 1 %}{% for i in [1, 2] %}{% set x = x + 10 %}{{ x }} {% endfor %}{{ x }}", {}),
    ("scope_if_set", "{% if true %}{% set y = 5 %}{% endif %}{{ y }}", {}),
    ("scope_iteration_fresh", "{% set x = 0 %}{% for i in [1, 2] %}{% if i == 1 %}{% set x = 7 %}{% set y = 1 %}{% endif %}[{{ x }}{{ y }}]{% endfor %}", {}),
    ("scope_macro_fresh", "{% macro m() %}{% set q = (q or 0) + 1 %}{{ q }}{% endmacro %}{{ m() }}{{ m() }}", {}),
    ("namespace", "{% set ns = namespace(count=0, found=false) %}{% for x in [1, 2, 3] %}{% set ns.count = ns.count + x %}"
     "{% if x == 2 %}{% set ns.found = true %}{% endif %}{% endfor %}{{ ns.count }} {{ ns.found }} {{ ns.nope is defined }}", {}),
    ("namespace_repr", "{{ namespace(a=1, b='x') }}", {}),
    ("set_tuple_unpack", "{% set a, b = 1, 2 %}{{ a }}{{ b }}{% set c, d = [3, 4] %}{{ c }}{{ d }}", {}),
    ("set_block", "{% set body %}Hello {{ name }}!\n{% endset %}[{{ body }}]{% set t | upper | trim %} x y {% endset %}[{{ t }}]",
     {"name": "Ana"}),
    ("with_block", "{% with a = 1, b = 2 %}{{ a + b }}{% endwith %}[{{ a }}]", {}),
    ("macro_basic", "{% macro greet(name, punct='!') %}Hi {{ name }}{{ punct }}{% endmacro %}{{ greet('A') }} {{ greet('B', '?') }} {{ greet(punct='.', name='C') }}", {}),
    ("macro_missing_arg", "{% macro f(a, b) %}[{{ a }}|{{ b }}|{{ b is defined }}]{% endmacro %}{{ f(1) }}", {}),
    ("macro_varargs_kwargs", "{% macro f(a) %}{{ a }}{{ varargs }}{{ kwargs }}{% endmacro %}{{ f(1, 2, 3, x=4) }}", {}),
    ("macro_recursion", "{% macro fact(n) %}{% if n <= 1 %}1{% else %}{{ n * fact(n - 1) | int }}{% endif %}{% endmacro %}{{ fact(5) }}", {}),
    ("macro_caller", "{% macro wrap(tag) %}<{{ tag }}>{{ caller() }}</{{ tag }}>{% endmacro %}{% call wrap('b') %}bold {{ x }}{% endcall %}",
     {"x": 1}),
    ("macro_caller_args", "{% macro each(items) %}{% for i in items %}{{ caller(i) }}{% endfor %}{% endmacro %}{% call(v) each([1, 2]) %}[{{ v }}]{% endcall %}", {}),
    ("macro_sees_globals_not_loop", "{% set g = 'G' %}{% macro m() %}{{ g }}{{ i is defined }}{% endmacro %}{% for i in [1] %}{{ m() }}{% endfor %}", {}),
    ("macro_output_is_str", "{% macro m() %}<x>{% endmacro %}{{ m() + '<y>' }}", {}),
    ("filter_block", "{% filter upper %}hello {{ name }}{% endfilter %}", {"name": "bob"}),
    ("raw_block", "{% raw %}{{ not rendered }}{% if %}{% endraw %}", {}),
    ("comments", "a{# comment #}b{#- trimmed -#}  c\n{# line #}\nd", {}),
    ("generation_tag", "{% for m in messages %}{% if m.role == 'assistant' %}{% generation %}{{ m.content }}{% set inner = 1 %}{% endgeneration %}{% endif %}{% endfor %}[{{ inner }}]",
     {"messages": MSGS}),
    ("print_statement", "{% print 'x' ~ 1 %}", {}),
    # ---- whitespace control (trim_blocks + lstrip_blocks)
    ("ws_trim_blocks", "{% if true %}\nA\n{% endif %}\nB\n", {}),
    ("ws_lstrip_blocks", "  {% if true %}\n    X\n  {% endif %}\nY", {}),
    ("ws_minus", "a  {%- if true -%}  b  {%- endif -%}  c\n  {{- ' d ' -}}  e", {}),
    ("ws_plus", "  {%+ if true %}x{% endif %}\n{% if true +%}\ny{% endif %}", {}),
    ("ws_var_no_lstrip", "  {{ 'v' }}\n  {% if true %}w{% endif %}", {}),
    ("ws_comment_lstrip", "a\n   {# c #}\nb", {}),
    ("ws_trailing_newline", "line\n", {}),
    ("ws_crlf", "a\r\n{% if true %}\r\nb\r\n{% endif %}\r\n", {}),
    ("ws_inline_tags", "x {% if true %}y{% endif %} z\n{% for i in [1,2] %}  {{ i }}\n{% endfor %}", {}),
    ("ws_raw_lstrip", "a\n  {% raw %}\n  x\n  {% endraw %}\nb", {}),
    # ---- filters
    ("f_trim", "[{{ '  a b \\n' | trim }}][{{ 'xxaxx' | trim('x') }}][{{ none | trim }}]", {}),
    ("f_length_count", "{{ 'añb' | length }} {{ [1, 2] | count }} {{ {'a': 1} | length }} {{ missing | length }}", {}),
    ("f_case", "{{ 'hello WORLD' | upper }} {{ 'Hello' | lower }} {{ 'hello wORLD-foo (bar' | title }} {{ 'hELLO world' | capitalize }}", {}),
    ("f_case_unicode", "{{ 'straße ñandú' | upper }} {{ 'ΣΊΣΥΦΟΣ' | lower }} {{ 'éCOLE' | capitalize }}", {}),
    ("f_replace", "{{ 'aaa' | replace('a', 'b') }} {{ 'aaa' | replace('a', 'b', 2) }} {{ 'abc' | replace('', '-') }}", {}),
    ("f_join", "{{ [1, 'a', none] | join }} {{ ['a', 'b'] | join(', ') }} {{ users | join('/', attribute='name') }}",
     {"users": [{"name": "x"}, {"name": "y"}]}),
    ("f_default", "{{ missing | default('d') }} {{ '' | default('e') }} {{ '' | default('e', true) }} {{ none | d('n') }} {{ 0 | default(5, boolean=true) }}", {}),
    ("f_first_last", "{{ [1, 2, 3] | first }} {{ [1, 2, 3] | last }} {{ 'abc' | first }} {{ [] | first is defined }} {{ {'a': 1, 'b': 2} | last }}", {}),
    ("f_items", "{{ d | items | list }} {{ missing | items | list }}", {"d": {"a": 1, "b": [2]}}),
    ("f_list_string", "{{ 'ab' | list }} {{ {'a': 1} | list }} {{ 1 | string }} {{ [1] | string }} {{ none | string }}", {}),
    ("f_int_float", "{{ '42' | int }} {{ ' 7 ' | int }} {{ '3.7' | int }} {{ 'x' | int }} {{ 'x' | int(9) }} {{ '0x1A' | int(0, 16) }} "
     "{{ 2.9 | int }} {{ '1.5' | float }} {{ 'a' | float }} {{ 3 | float }} {{ true | int }}", {}),
    ("f_round", "{{ 2.5 | round }} {{ 3.14159 | round(2) }} {{ 2.675 | round(2) }} {{ 2.1 | round(0, 'ceil') }} {{ 2.9 | round(method='floor') }} {{ 5 | round }}", {}),
    ("f_safe_escape", "{{ '<b>' | safe }} {{ '<b>&\"\\'' | escape }} {{ ('<a>' | safe) + '<b>' }} {{ '<c>' + ('&' | safe) }} {{ ('<x>'|safe) ~ '<y>' }}", {}),
    ("f_selectattr", "{{ users | selectattr('active') | map(attribute='name') | join(',') }} "
     "{{ users | rejectattr('active') | map(attribute='name') | list }} "
     "{{ users | selectattr('role', 'equalto', 'admin') | list | length }} "
     "{{ users | selectattr('role', '==', 'user') | first }}",
     {"users": [{"name": "a", "active": True, "role": "admin"}, {"name": "b", "active": False, "role": "user"},
                {"name": "c", "active": True, "role": "user"}]}),
    ("f_map", "{{ ['a', 'b'] | map('upper') | list }} {{ d | map(attribute='x.y', default='?') | list }} {{ [1.5, 2] | map('int') | join('+') }}",
     {"d": [{"x": {"y": 1}}, {"x": {}}, {}]}),
    ("f_select_reject", "{{ [0, 1, 2, 3, none, ''] | select | list }} {{ range(6) | select('odd') | list }} {{ range(6) | reject('divisibleby', 3) | list }}"
     " {{ ['a', 1, 'b'] | select('string') | list }}", {}),
    ("f_unique", "{{ ['a', 'A', 'b', 'a'] | unique | list }} {{ ['a', 'A'] | unique(case_sensitive=true) | list }} "
     "{{ users | unique(attribute='g') | map(attribute='n') | list }}",
     {"users": [{"n": 1, "g": "x"}, {"n": 2, "g": "y"}, {"n": 3, "g": "x"}]}),
    ("f_dictsort", "{{ d | dictsort }} {{ d | dictsort(true) }} {{ d | dictsort(by='value') }} {{ d | dictsort(reverse=true) }}",
     {"d": {"b": 2, "A": 3, "a": 1}}),
    ("f_sort", "{{ [3, 1, 2] | sort }} {{ ['b', 'A', 'c'] | sort }} {{ ['b', 'A'] | sort(case_sensitive=true) }} {{ [1, 3, 2] | sort(reverse=true) }} "
     "{{ users | sort(attribute='age') | map(attribute='n') | list }}",
     {"users": [{"n": "x", "age": 30}, {"n": "y", "age": 20}]}),
    ("f_indent", "{{ 'a\\nb\\n\\nc' | indent }}|{{ 'a\\nb' | indent(2, true) }}|{{ 'a\\n\\nb' | indent(width='>', blank=true) }}|{{ 'x\\n' | indent(first=true) }}", {}),
    ("f_wordcount", "{{ 'Hello, world! foo_bar 42' | wordcount }} {{ '' | wordcount }}", {}),
    ("f_abs_sum_minmax", "{{ -3 | abs }} {{ -2.5 | abs }} {{ [1, 2, 3] | sum }} {{ d | sum(attribute='v') }} {{ [3, 1, 2] | max }} {{ ['b', 'A'] | min }} {{ [] | max is defined }}",
     {"d": [{"v": 1}, {"v": 2.5}]}),
    ("f_batch_slice", "{{ range(5) | batch(2) | list }} {{ range(5) | batch(2, 'x') | list }} {{ range(5) | slice(2) | list }}", {}),
    ("f_reverse", "{{ 'abc' | reverse }} {{ [1, 2, 3] | reverse | list }}", {}),
    ("f_center_truncate", "[{{ 'ab' | center(6) }}] [{{ 'hello world foo bar' | truncate(12) }}] [{{ 'short' | truncate(10) }}]", {}),
    ("f_format", "{{ '%s-%d' | format('a', 3) }} {{ '%(x)s' | format(x='y') }} {{ '%05.1f|%x|%r' | format(3.14159, 255, 'q') }}", {}),
    ("f_attr", "{{ d | attr('x') is defined }} {{ (d | attr('items'))() | list }}", {"d": {"x": 1}}),
    ("f_tojson", "{{ d | tojson }}\n{{ d | tojson(indent=2) }}\n{{ d | tojson(separators=(',', ':')) }}\n{{ d | tojson(sort_keys=true) }}",
     {"d": {"b": [1, 2.0, None, True], "a": {"x": "é\"\\\n\t\u0001"}, "e": [], "f": {}}}),
    ("f_tojson_ascii_indent_str", "{{ 'é😀' | tojson(ensure_ascii=true) }} {{ [1, [2]] | tojson(indent='\\t') }} {{ 1.5e-7 | tojson }} {{ 10**20 if false else 1e20 | tojson }}", {}),
    ("f_tojson_positional", "{{ 'é' | tojson(true) }}", {}),
    ("f_tojson_undefined", "{{ missing | tojson }}", {}),
    ("f_tojson_generator", "{{ [1] | map('string') | tojson }}", {}),
    ("f_length_generator", "{{ [1] | select | length }}", {}),
    ("generator_lazy_error", "{{ (true | batch(2)) is defined }} {{ 5 | items is defined }} {{ false | map('upper') | list }}", {}),
    ("generator_lazy_error_consumed", "{{ 5 | items | list }}", {}),
    ("dict_views", "{{ d.keys() }} {{ d.values() }} {{ d.items() }} {{ d.keys() | length }} {{ 'a' in d.keys() }} {{ d.keys()[0] is defined }}",
     {"d": {"a": 1, "b": [2]}}),
    ("dict_view_tojson", "{{ d.keys() | tojson }}", {"d": {"a": 1}}),
    ("dict_view_not_sequence", "{{ d.values() is sequence }} {{ d.values() is iterable }} {{ d.items() | list }}", {"d": {"a": 1}}),
    ("percent_format_view_arg", "{{ 'x' % d.keys() }}", {"d": {"a": 1}}),
    ("percent_format_quirks", "{{ 'x' % [] }} {{ 'x' % {} }} {{ '%s' % 'a' }} {{ '%s|%s' % (1, none) }} {{ 'y' % missing }}", {}),
    ("percent_format_extra_arg", "{{ 'x' % 5 }}", {}),
    ("center_title_quirks", "[{{ 'ab' | center(5) }}][{{ 'ab'.center(5) }}][{{ '{:^5}'.format('ab') }}][{{ 'ßa'.title() }}][{{ 'ßa' | capitalize }}]", {}),
    ("undefined_int_filter", "{{ missing | int }}", {}),
    ("slice_non_sequence", "{{ x[1:] }}", {"x": 5}),
    ("markup_iteration", "{{ ('ab' | safe) | list }}", {}),
    ("generator_single_use", "{% set g = [1, 2] | select %}{{ g | list }}{{ g | list }}{% if g %}T{% endif %}", {}),
    # ---- tests
    ("tests_types", "{{ 1 is number }}{{ 1.0 is number }}{{ true is number }}{{ 1 is integer }}{{ true is integer }}{{ 1.0 is float }}"
     "{{ true is boolean }}{{ 1 is boolean }}{{ 's' is string }}{{ d is mapping }}{{ l is mapping }}{{ none is none }}",
     {"d": {}, "l": []}),
    ("tests_iterable_sequence", "{{ 's' is iterable }}{{ l is iterable }}{{ d is iterable }}{{ 1 is iterable }}{{ missing is iterable }}"
     "{{ 's' is sequence }}{{ d is sequence }}{{ 1 is sequence }}{{ none is iterable }}", {"d": {}, "l": []}),
    ("tests_compare", "{{ 1 is equalto 1 }}{{ 'a' is eq('a') }}{{ 2 is gt 1 }}{{ 2 is lt(1) }}{{ 3 is ge 3 }}{{ 3 is ne 3 }}"
     "{{ 2 is greaterthan 1 }}{{ 1 is lessthan 2 }}{{ 3 is divisibleby 3 }}{{ 3 is odd }}{{ 3 is even }}", {}),
    ("tests_misc", "{{ 1 is in [1, 2] }}{{ 'a' is in 'abc' }}{{ true is true }}{{ 1 is true }}{{ false is false }}{{ 'abc' is lower }}"
     "{{ 'ABC' is upper }}{{ none is sameas none }}{{ x is callable }}{{ range is callable }}{{ 'upper' is filter }}{{ 'odd' is test }}",
     {"x": 1}),
    ("tests_not", "{{ 1 is not string }}{{ none is not none }}{{ missing is not defined }}", {}),
    # ---- string methods
    ("m_strip", "[{{ '  a  '.strip() }}][{{ 'xxaxx'.strip('x') }}][{{ '  a  '.lstrip() }}][{{ '  a  '.rstrip() }}][{{ '\\u3000a\\xa0'.strip() }}]", {}),
    ("m_split", "{{ 'a,b,,c'.split(',') }} {{ ' a  b '.split() }} {{ 'a,b,c'.split(',', 1) }} {{ 'a,b,c'.rsplit(',', 1) }} {{ 'a\\nb\\r\\nc'.splitlines() }}", {}),
    ("m_startswith", "{{ 'hello'.startswith('he') }} {{ 'hello'.endswith('lo') }} {{ 'hello'.startswith(('x', 'h')) }} {{ 'hello'.endswith('x') }}", {}),
    ("m_case", "{{ 'ab cd'.upper() }} {{ 'AB'.lower() }} {{ \"they're bill's\".title() }} {{ 'hello'.capitalize() }} {{ 'aB'.swapcase() }}", {}),
    ("m_replace", "{{ 'a-b-c'.replace('-', '+') }} {{ 'a-b-c'.replace('-', '', 1) }}", {}),
    ("m_format", "{{ '{}-{}'.format(1, 'a') }} {{ '{1}{0}'.format('a', 'b') }} {{ '{x}!'.format(x=3) }} {{ '{:>5}|{:<4}|{:^5}|{:05d}|{:.2f}|{:,}'.format('a', 'b', 'c', 42, 3.14159, 1234567) }} {{ '{{}}{!r}'.format('q') }}", {}),
    ("m_find_count", "{{ 'hello'.find('l') }} {{ 'hello'.rfind('l') }} {{ 'hello'.find('z') }} {{ 'hello'.count('l') }} {{ 'héllo'.index('l') }}", {}),
    ("m_is", "{{ '123'.isdigit() }} {{ 'abc'.isalpha() }} {{ 'a1'.isalnum() }} {{ '  '.isspace() }} {{ 'AB'.isupper() }} {{ 'ab'.islower() }} {{ ''.isdigit() }}", {}),
    ("m_join_partition", "{{ ', '.join(['a', 'b']) }} {{ 'a=b=c'.partition('=') }} {{ 'a=b=c'.rpartition('=') }} {{ 'ab'.zfill(4) }} {{ 'ab'.center(6, '*') }} {{ 'ab'.ljust(4, '.') }}", {}),
    ("m_removeprefix", "{{ 'prefix_x'.removeprefix('prefix_') }} {{ 'x.py'.removesuffix('.py') }}", {}),
    ("m_dict", "{{ d.get('a') }} {{ d.get('z') }} {{ d.get('z', 0) }} {{ d.items() | list }} {{ d.keys() | list }} {{ d.values() | list }}",
     {"d": {"a": 1, "b": 2}}),
    ("m_dict_items_loop", "{% for k, v in d.items() %}{{ k }}{{ v }}{% endfor %}", {"d": {"x": 1, "y": [2]}}),
    ("m_list", "{{ l.index(2) }} {{ l.count(1) }}", {"l": [1, 2, 1]}),
    ("m_list_append_unsafe", "{% set l = [] %}{% set _ = l.append(1) %}{{ l }}", {}),
    ("m_dict_update_unsafe", "{% set d = {} %}{{ d.update({'a': 1}) }}", {}),
    ("m_list_pop_unsafe", "{{ [1, 2].pop() }}", {}),
    ("m_dunder", "{{ ''.__class__ }}", {}),
    # ---- globals
    ("g_range", "{{ range(3) | list }} {{ range(1, 7, 2) | list }} {{ range(5, 0, -2) | list }} {{ range(0) | list }}", {}),
    ("g_range_too_big", "{{ range(200000) | length }}", {}),
    ("g_dict", "{{ dict(a=1, b='x') }} {{ dict(a=1).a }}", {}),
    ("g_raise_exception", "{% if messages[0].role != 'user' %}{{ raise_exception('Roles must alternate!') }}{% endif %}", {"messages": MSGS}),
    ("g_strftime_now", "{{ strftime_now('%d %b %Y') }} {{ strftime_now('%Y-%m-%d %H:%M:%S %A %j') }}", {}),
    ("g_joiner_cycler", "{% set j = joiner('|') %}{% for x in [1, 2, 3] %}{{ j() }}{{ x }}{% endfor %} {% set c = cycler('a', 'b') %}{{ c.next() }}{{ c.next() }}{{ c.next() }}", {}),
    # ---- errors (both raise)
    ("err_str_plus_int", "{{ 'a' + 1 }}", {}),
    ("err_compare_types", "{{ 'a' < 1 }}", {}),
    ("err_div_zero", "{{ 1 / 0 }}", {}),
    ("err_unknown_filter", "{{ 1 | no_such_filter }}", {}),
    ("err_unknown_filter_guarded", "{% if false %}{{ 1 | no_such_filter }}{% endif %}ok", {}),
    ("err_unknown_filter_in_loop_in_if", "{% if false %}{% for x in [] %}{{ x | no_such_filter }}{% endfor %}{% endif %}ok", {}),
    ("err_unknown_test", "{{ 1 is no_such_test }}", {}),
    ("err_unknown_tag", "{% do x %}", {}),
    ("err_unclosed_block", "{% if true %}x", {}),
    ("err_not_iterable", "{% for x in 5 %}{% endfor %}", {}),
    ("err_call_non_callable", "{{ 'a'() }}", {}),
    ("err_namespace_assign", "{% set x = 1 %}{% set x.y = 2 %}", {}),
    ("err_unpack", "{% set a, b = [1, 2, 3] %}", {}),
    ("err_break_outside_loop", "{% break %}", {}),
]


def render_all(call):
    out = []
    for name, template, context in CASES:
        try:
            result = {"text": call(template, context)}
        except Exception as e:  # noqa: BLE001
            result = {"error": f"{type(e).__name__}: {e}"}
        out.append({"name": name, "template": template, "context": context} | result)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out")
    ap.add_argument("--cli", help="inferdesk-cli to compare against (prints differences)")
    args = ap.parse_args()
    names = [c[0] for c in CASES]
    assert len(names) == len(set(names)), "duplicate case names"

    def jinja_call(template, context):
        return _ENV.from_string(template).render(**context)

    global _ENV
    _ENV = _make_env()
    cases = render_all(jinja_call)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            json.dump({"generator": "tools/chat/make_feature_cases.py (jinja2 " + _jinja_version() + ")",
                       "fixed_now": "2025-03-14T09:26:53", "cases": cases}, f, ensure_ascii=False, indent=1)
            f.write("\n")
    if args.cli:
        bad = 0
        with tempfile.TemporaryDirectory() as tmp:
            for case in cases:
                if "strftime" in case["template"]:
                    continue
                tpath, cpath = os.path.join(tmp, "t.jinja"), os.path.join(tmp, "c.json")
                with open(tpath, "w", encoding="utf-8", newline="") as f:
                    f.write(case["template"])
                with open(cpath, "w", encoding="utf-8") as f:
                    json.dump(case["context"], f)
                p = subprocess.run([args.cli, "render-template", "--template", tpath, "--context", cpath],
                                   capture_output=True)
                got = p.stdout.decode("utf-8", "replace")
                if "error" in case:
                    if p.returncode == 0:
                        bad += 1
                        print(f"{case['name']}: jinja2 raised {case['error']!r}, we rendered {got!r}")
                elif p.returncode != 0 or got != case["text"]:
                    bad += 1
                    print(f"{case['name']}:\n  want {case['text']!r}\n  got  {got!r} {p.stderr.decode()[:300]}")
        print(f"{len(cases) - bad} of {len(cases)} cases agree")


def _jinja_version():
    import jinja2
    return jinja2.__version__


def _make_env():
    """transformers' environment, whole-context rendering (shared with make_reference.py)."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from make_reference import make_mimic_env
    return make_mimic_env()


_ENV = None

if __name__ == "__main__":
    main()
