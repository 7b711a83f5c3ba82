#!/usr/bin/env python3
"""Writes tests/golden/tokenizer/corpus.jsonl: one JSON string per line, the text every tokenizer
is checked on (see make_reference.py). The lines are written for this project; edit them here and
rerun make_reference.py on the GPU machine afterwards."""
import json
import pathlib

LINES = [
    # English, punctuation, contractions
    "Hello world",
    " Hello world",
    "Hello  world",
    "Hello world   ",
    "The quick brown fox jumps over the lazy dog.",
    "I'm sure they'll say it's fine, but we've seen what you'd do. Don't!",
    "THEY'LL WE'VE I'M SHE'D It'S",
    "Hello , world ! How are you ? I 'm fine , isn 't it ?",
    "“Smart quotes” and ‘apostrophes’ — dashes – and… ellipses",
    "e-mail: someone@example.org, web: https://example.com/path?q=1&r=two#frag",
    # code
    "def fib(n):\n    if n < 2:\n        return n\n    return fib(n - 1) + fib(n - 2)\n",
    "#include <vector>\nint main() {\n\tstd::vector<int> v{1, 2, 3};\n\treturn v.size() == 3 ? 0 : 1;\n}\n",
    "{\"name\": \"InferDesk\", \"version\": [0, 1, 0], \"ok\": true, \"ratio\": 0.75}",
    "<div class=\"box\"><p>Text &amp; more</p></div>",
    "SELECT id, name FROM users WHERE age >= 18 ORDER BY name;",
    "for (int i = 0; i < n; ++i) { sum += a[i] * b[i]; }  // dot product",
    "x = [i**2 for i in range(10) if i % 2 == 0]",
    "```python\nprint('hi')\n```\n\n# Title\n\n- item 1\n- item 2\n",
    # numbers
    "1234567890",
    "3.14159 2.71828 -42 +7 1e-9 0x1F 0b1010",
    "1,000,000 and 12,345.67 dollars",
    "12345678901234567890123456789",
    "Call 555-0123 on 2024-03-15 at 09:45:30.",
    "١٢٣ ४५६ 七八九 ⅩⅡ ½ ²³",
    # whitespace runs, tabs, newlines
    "",
    " ",
    "  ",
    "   ",
    "\t",
    "\n",
    "\n\n\n",
    "\t\tindented\twith\ttabs",
    "line one\nline two\r\nline three\rline four",
    "trailing spaces   \n   leading spaces",
    "a \n\n b  \n\t c   ",
    "word          word",
    "\u00a0non-breaking\u00a0space and\u3000ideographic\u3000space",
    "zero\u200bwidth\u200cjoiner\u200dthings and\u2028line\u2029separators\u0085nel",
    # CJK
    "你好，世界！今天天气很好。",
    "日本語のテキストです。カタカナとひらがな。",
    "한국어 문장을 토큰화합니다.",
    "混合 mixed 文本 text 123 数字",
    # RTL
    "مرحبا بالعالم! كيف حالك؟",
    "שלום עולם, מה שלומך?",
    "العدد 42 في النص and English",
    # other scripts
    "Привет, мир! Съешь же ещё этих мягких французских булок.",
    "Γειά σου Κόσμε",
    "नमस्ते दुनिया",
    "สวัสดีชาวโลก",
    "Äpfel über Straße, l'été dernier, Łódź, Ærøskøbing",
    # emoji, ZWJ sequences, flags, skin tones
    "I love 🦙 and 🐍!",
    "👨‍👩‍👧‍👦 family",
    "🏳️‍🌈🏴‍☠️🇫🇷🇯🇵",
    "👍🏽👋🏿🤷‍♀️",
    "😀😃😄😁😆😅😂🤣",
    # combining marks (NFC-sensitive)
    "e\u0301 vs \u00e9, A\u030a vs \u00c5, n\u0303",
    "Tiếng Việt có dấu",
    "a\u0300\u0301\u0302\u0303\u0304 z\u0336\u0336",
    "\u1100\u1161\u11a8 decomposed hangul",
    # rare characters (byte fallback)
    "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𝕞𝕒𝕥𝕙 ∑_{i=1}^{n} x_i² ≤ ∞",
    "control \u0001\u0007\u001b[31mred\u001b[0m",
    "nul\u0000byte",
    "\U0001F600\U0001FAE0\U00010348",
    "literal markers ▁ and Ġ and Ċ in text",
    "<0x41> is not a byte token",
    # special-token strings
    "<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n",
    "<s>[INST] What is 2+2? [/INST] 4</s>",
    "<s> leading bos and</s> trailing eos",
    "[INST]no spaces[/INST]",
    "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>",
    "text<|endoftext|>more text",
    "<|user|>\nHello<|end|>\n<|assistant|>\nHi there<|end|>",
    "<|user|>  spaces after<|end|>  and more",
    " <|im_start|> spaced <|im_end|> ",
    "<|im_start|><|im_start|><|im_end|>",
    "<unk> and <pad> and <mask>",
    "[TOOL_CALLS] [AVAILABLE_TOOLS] [TOOL_RESULTS] [/TOOL_RESULTS]",
    "<|fim_prefix|>def f():<|fim_suffix|>\n<|fim_middle|>",
    "<tool_call>\n{\"name\": \"get_weather\"}\n</tool_call>",
    "<<SYS>>\nYou are helpful.\n<</SYS>>\n\n",
    # repetition
    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
    "!!!!!!!!!!!!!!!!????????????............",
    "==================================================",
    "                                                  x",
    "ababababababababababababababababab",
    # misc
    "ﬁ ligature, ｆｕｌｌｗｉｄｔｈ ＡＢＣ, ℌ, ①",
    "Mixed CASE wOrDs And SnakeCase_variables camelCaseToo",
    "A sentence with a very-long-hyphenated-compound-word-in-it.",
    "tab\tseparated\tvalues\n1\t2\t3",
    "'quoted' \"double\" `backtick` 's 't 're 've 'm 'll 'd",
    # added in the second reference run
    "a\u180eb c\u180e d",
    "<|im_end|><|im_start|>assistant\n<|im_end|>",
    "</s><s><s>[INST]x[/INST]</s>",
    " <s>hi there",
    "<|end|>\n\n<|user|>  x<|end|>   ",
    "Hello\u2581world and \u0120spaced",
    "tab\t\tand  \u00a0 nbsp\u00a0\u00a0mix",
    "\u00c5\u00c5A\u030aA\u030a\u212b",
    "'s 'S 'T 'Re 'VE 'Ll 'D don'T",
    "3,141,592.65358979 and 0.000001 and 1e+100",
    "Supercalifragilisticexpialidocious" * 10,
    "line\r\n\r\n  indented\r\n\tx",
    "<|endoftext|>",
    "Z\u0351\u036b\u0343\u036a\u0302\u036b\u033d\u034f\u0334\u0319\u0324\u031e\u0349\u035a\u032f\u031e\u0320\u034dA\u036b\u0357",
    "\u263a\ufe0f 1\ufe0f\u20e3 #\ufe0f\u20e3 \u2764\ufe0f\u200d\U0001f525",
    "\u03b1\u03b2\u03b3 \u0430\u0431\u0432 \u05d0\u05d1\u05d2 \u0e01\u0e02",
    ("The tokenizer must match Hugging Face on long paragraphs too. " * 6 +
     "def main():\n    for i in range(10):\n        print(f\"{i:>4} squared is {i * i}\")  # comment\n" * 3 +
     "    trailing   spaces   and\ttabs\t\there.   " * 4),
    "   ".join(["word%d" % i for i in range(60)]),
]


def main():
    out = pathlib.Path(__file__).resolve().parents[2] / "tests/golden/tokenizer/corpus.jsonl"
    with open(out, "w", encoding="utf-8") as f:
        for line in LINES:
            f.write(json.dumps(line, ensure_ascii=True) + "\n")
    print(f"wrote {len(LINES)} lines to {out}")


if __name__ == "__main__":
    main()
