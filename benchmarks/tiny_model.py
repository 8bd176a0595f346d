"""Build a tiny random Qwen3-style model, with no download, to test the vLLM path on a CPU (its
output is noise; docs/lighteval-and-vllm.md says why it is shaped so):
`python -m benchmarks.tiny_model OUT_DIR [--corpus FILE ...] [--vocab-size 1024]`."""

from __future__ import annotations

import argparse
from pathlib import Path

from oab_bench.conventions import TINY_MODEL_MARKER
from oab_bench.folders import Writer, check_folder, claim

TINY = Writer("python -m benchmarks.tiny_model", TINY_MODEL_MARKER)

CHAT_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
MADE_UP = [
    "A empresa Alfa Ltda. ajuizou ação contra o Município Beta, alegando cobrança indevida de taxa.",
    "Redija a peça cabível, indicando o fundamento legal e os pedidos. Responda aos itens A e B.",
    "O recurso é tempestivo? Fundamente com base na Constituição Federal e no Código de Processo Civil.",
]


def build(out: Path, corpus: list[Path] | None = None, vocab_size: int = 1024, seed: int = 0) -> Path:
    check_folder(out, TINY, "OUT_DIR")  # it replaces config.json, the weights, the tokenizer: only in ours
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast, Qwen3Config, Qwen3ForCausalLM

    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    alphabet = pre_tokenizers.ByteLevel.alphabet()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=SPECIALS, initial_alphabet=alphabet)
    texts = MADE_UP + [line for path in corpus or [] for line in path.read_text(encoding="utf-8").split("\n")]
    bpe.train_from_iterator([t for t in texts if t.strip()], trainer=trainer)
    specials = dict(bos_token=None, eos_token="<|im_end|>", pad_token="<|endoftext|>")
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=bpe, chat_template=CHAT_TEMPLATE, **specials)
    torch.manual_seed(seed)
    shape = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=2)
    shape |= dict(head_dim=32, num_key_value_heads=2, max_position_embeddings=32768)  # vLLM's CPU: head >= 32
    shape |= dict(tie_word_embeddings=False, torch_dtype="float32")
    ids = dict(eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id, bos_token_id=None)
    config = Qwen3Config(vocab_size=len(tokenizer), **shape, **ids)
    model = Qwen3ForCausalLM(config)
    # End-of-text and blank tokens get a zero output row: with random weights some other logit is
    # always higher, so greedy decoding never ends at once or writes only spaces (an empty answer).
    special_ids = set(tokenizer.all_special_ids)
    blank = [i for i in range(len(tokenizer)) if i in special_ids or not tokenizer.decode([i]).strip()]
    with torch.no_grad():
        model.lm_head.weight[blank] = 0.0
    claim(out, TINY)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("output")
    p.add_argument("--corpus", nargs="*", default=[], help="text or JSONL files to train the tokenizer on")
    p.add_argument("--vocab-size", type=int, default=1024)
    args = p.parse_args(argv)
    print(build(Path(args.output), [Path(c) for c in args.corpus], args.vocab_size))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
