"""The run book's entries (`ENTRIES`): what each call runs, what its numbers are compared with and
which page they go to (docs/accelerator.md). No jax: the table is data."""

import dataclasses


@dataclasses.dataclass(frozen=True)
class Entry:
  """One kind of call: what it runs, what its numbers are compared with, where they go."""
  title: str
  compared: str
  docs: str
  options: tuple[str, ...] = ()   # the entry's own command-line options (others are refused)


ENTRIES = {
    'coconut': Entry(
        'Coconut vs CoT vs No-CoT, `:superposition` cut to one call per seed',
        'Hao et al. 2024 (arXiv 2412.06769) Table 1, ProsQA, GPT-2: Coconut 97.0 ± 0.3, CoT 77.5 '
        '± 1.9, No-CoT 76.7 ± 1.0 (mean ± sd over seeds); the effect asked on the coconut page: '
        'Coconut ≥ 85% and ≥ 10 points above CoT and No-CoT, removing the thoughts costing ≥ 15',
        'docs/experiments/coconut.md', ('seed', 'train_budget_s', 'combine')),
    'galore': Entry(
        'GaLore at scale: AdamW vs GaLore (SVD, eigh, subspace iteration), galore_pretrain:paper 60M',
        'the one H100 measurement at d 1024 × 4 layers (docs/benchmarks.md): GaLore SVD 2.045× '
        'AdamW amortised over T = 200, eigh 1.235×; goal ≤ 1.10×',
        'docs/benchmarks.md', ()),
    'mfu': Entry(
        'MFU of a GPT-2-124M-shaped decoder in bfloat16, einsum vs cuDNN attention',
        'goal ≥ 40% of the bf16 dense peak (989 TFLOP/s on an H100); JoMA 12.8% and GaLore 21.0% '
        'on the same H100 (docs/benchmarks.md)', 'docs/benchmarks.md', ('attention',)),
    'sinks': Entry(
        'a Bigram-Backcopy grid program (`long`, `reference`), seeds split to fit',
        'the targets fixed before the grid ran: a sink (α₀ > 0.3) in every BOS seed, BOS eviction '
        'ratio ≥ 1.5 on average, no-BOS 1.00 ± 0.01, sink token alone ≤ 1.01 × 4 initial tokens; '
        'StreamingLLM (Xiao et al. 2023, arXiv 2309.17453) 160M vanilla 0+C 27.87 vs 4+ 18.05',
        'docs/experiments/attention_sinks.md', ('program', 'seeds', 'combine')),
    'joma': Entry(
        'JoMA Table 1 at `:paper` size (d 1024, 10k steps, 5 seeds), as many cells as fit',
        'Tian et al. 2024 Table 1: NCorr(s=0) 0.94–1.00, NCorr(s=1) 0.55–0.81, mean ± std over 5 '
        'seeds (`studies.joma_table1.PUBLISHED`)', 'docs/experiments/joma_hierarchical.md',
        ('cells', 'budget_s')),
    'streaming': Entry(
        'StreamingLLM on a pretrained model over 20k+ tokens at caches 1024 and 2048',
        'Xiao et al. 2023 (arXiv 2309.17453) Fig. 3 / Table 1: window attention blows up once the '
        'first tokens are evicted (Llama-2-13B 5158.07 vs 5.40 with 4 sinks at cache 1024), sinks '
        '+ window stay at the re-computed window\'s perplexity',
        'docs/experiments/attention_sinks.md',
        ('model', 'text', 'caches', 'sinks', 'max_tokens', 'block', 'dtype')),
}
