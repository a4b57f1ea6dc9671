"""The careful reader: rerank the fused candidates, keep the best eight, deal them ends-first."""
