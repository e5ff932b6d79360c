"""How to cite each benchmark, and what is known for certain of its licence.

The export's dataset card (`engine.export`) names, per benchmark of the artifact, the paper to cite and
where its licence is: the items are the benchmark's, and its licence and terms govern them. A licence is
given only where the release itself declares one (its Hugging Face dataset card); otherwise `licence` is
None and the card says to see the source benchmark (where it is released: its registration's `source`,
`engine.datasets.benchmark`). An adapter without an entry here (a registered extension, Video-MME v2) is named as it is and
pointed to its release.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["CITATIONS", "Citation"]


@dataclass(frozen=True)
class Citation:
    """A benchmark's paper and, where its release declares one, its licence."""

    name: str
    """The benchmark as its authors write it."""
    title: str
    authors: str
    """The first author, ``et al.`` where there are more."""
    arxiv: str
    """The paper's arXiv id."""
    licence: str | None = None
    """The licence the release declares (an SPDX-style id as its Hub card gives it); None: not known for certain."""
    terms: str = ""
    """Terms beside the licence (research use only, the videos' own terms)."""

    def line(self) -> str:
        """One reference: ``Title. Authors. arXiv:ID (https://arxiv.org/abs/ID).``"""
        return f"{self.title}. {self.authors}. arXiv:{self.arxiv} (https://arxiv.org/abs/{self.arxiv})."


CITATIONS: dict[str, Citation] = {
    "videomme": Citation("Video-MME", "Video-MME: The First-Ever Comprehensive Evaluation Benchmark of Multi-modal "
                         "LLMs in Video Analysis", "Chaoyou Fu et al.", "2405.21075"),
    "mlvu": Citation("MLVU", "MLVU: A Comprehensive Benchmark for Multi-Task Long Video Understanding",
                     "Junjie Zhou et al.", "2406.04264", "cc-by-nc-sa-4.0",
                     "academic research only; the videos' copyrights stay with their owners"),
    "mvbench": Citation("MVBench", "MVBench: A Comprehensive Multi-modal Video Understanding Benchmark",
                        "Kunchang Li et al.", "2311.17005", "mit",
                        "its videos come from other public datasets, each under its own terms"),
    "tempcompass": Citation("TempCompass", "TempCompass: Do Video LLMs Really Understand Videos?", "Yuanxin Liu et al.",
                            "2403.00476"),
    "avsd": Citation("AVSD", "Audio Visual Scene-Aware Dialog", "Huda Alamri et al.", "1901.09107",
                     terms="its videos are the Charades videos, under Charades' own terms"),
    "mmstar": Citation("MMStar", "Are We on the Right Way for Evaluating Large Vision-Language Models?",
                       "Lin Chen et al.", "2403.20330"),
    "pope": Citation("POPE", "Evaluating Object Hallucination in Large Vision-Language Models", "Yifan Li et al.",
                     "2305.10355"),
    "mme": Citation("MME", "MME: A Comprehensive Evaluation Benchmark for Multimodal Large Language Models",
                    "Chaoyou Fu et al.", "2306.13394"),
    "mmbench": Citation("MMBench", "MMBench: Is Your Multi-modal Model an All-around Player?", "Yuan Liu et al.",
                        "2307.06281"),
    "video_mmmu": Citation("Video-MMMU", "Video-MMMU: Evaluating Knowledge Acquisition from Multi-Discipline "
                           "Professional Videos", "Kairui Hu et al.", "2501.13826",
                           terms="the videos' rights stay with their creators"),
    "llava_video_178k": Citation("LLaVA-Video-178K", "Video Instruction Tuning With Synthetic Data",
                                 "Yuanhan Zhang et al.", "2410.02713"),
}
"""Adapter name -> its benchmark's citation (the synthetic adapter is framesweep's own: no entry)."""
