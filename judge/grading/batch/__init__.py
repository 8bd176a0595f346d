"""Judging through a provider's Batch API (OpenAI-style `/v1/files` + `/v1/batches`): the same
requests as direct calls at the batch price, recorded in the cache folder before they are
submitted so that a killed run reattaches to its batches instead of paying for them twice."""
