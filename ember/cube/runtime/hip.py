"""HIP (ROCm): rendering only. ``kern.generated_source(..., device="hip")`` shows the HIP C++ a kernel
becomes; launching needs a hiprtc binding, which ember does not ship yet."""

from __future__ import annotations

from ..errors import LaunchError


class HipRuntime:
    key = "hip"

    def __init__(self):
        from ..frontend import Target
        self.frontend_target = Target("hip", 64)

    def render(self, kir, plan) -> str:
        from ..render.hip import render
        return render(kir, plan)

    def compile(self, kir, plan, source: str):
        raise LaunchError("ember.cube renders HIP (kern.generated_source(..., device='hip')) but has no HIP runtime "
                          "yet")

    def launch(self, obj, grid, block, values) -> None:  # pragma: no cover - compile refuses first
        raise LaunchError("no HIP runtime")
