"""habitat_mosnav: multi-object visual navigation (MOS/MOC) as a native Habitat-Lab plugin."""
import os

from setuptools import find_packages, setup
from setuptools.command.build_py import build_py

# A start-up hook so that `import habitat` works without habitat-sim even before
# `import habitat_mosnav` (see habitat_mosnav/_compat.py). Installed into site-packages.
PTH_NAME = "habitat_mosnav_compat.pth"
PTH_LINE = "import _habitat_mosnav_pth\n"


class BuildPyWithPth(build_py):
    """Regular wheels: put the .pth file at the root of site-packages."""

    def run(self):
        super().run()
        with open(os.path.join(self.build_lib, PTH_NAME), "w") as f:
            f.write(PTH_LINE)

    def get_outputs(self, include_bytecode=1):
        return super().get_outputs(include_bytecode) + [os.path.join(self.build_lib, PTH_NAME)]


CMDCLASS = {"build_py": BuildPyWithPth}

try:  # Editable installs (PEP 660) build their own wheel: add the .pth there too.
    from setuptools.command.editable_wheel import editable_wheel

    class _StrategyWithPth:
        def __init__(self, inner):
            self.inner = inner

        def __enter__(self):
            self.inner.__enter__()
            return self

        def __exit__(self, *exc):
            return self.inner.__exit__(*exc)

        def __call__(self, wheel, files, mapping):
            self.inner(wheel, files, mapping)
            wheel.writestr(PTH_NAME, PTH_LINE)

    class EditableWheelWithPth(editable_wheel):
        def _select_strategy(self, *args, **kwargs):
            return _StrategyWithPth(super()._select_strategy(*args, **kwargs))

    CMDCLASS["editable_wheel"] = EditableWheelWithPth
except ImportError:  # old setuptools: `pip install .` still ships the hook
    pass

setup(
    name="habitat_mosnav",
    version="0.1.0",
    description="Multi-object visual navigation benchmark (MOS/MOC) as a Habitat-Lab plugin",
    packages=find_packages(include=["habitat_mosnav", "habitat_mosnav.*"]),
    # benchmark_api: the original benchmark's `from benchmark_api import Action, Observation`
    py_modules=["_habitat_mosnav_pth", "benchmark_api"],
    cmdclass=CMDCLASS,
    include_package_data=True,
    package_data={"habitat_mosnav": ["config/**/*.yaml", "data/**/*", "dataset_building/data/*.json"]},
    python_requires=">=3.9",
    install_requires=[
        "habitat-lab==0.3.320260507",
        "numpy>=1.21,<2",
        "omegaconf>=2.3,<2.4",
        "hydra-core>=1.3,<1.4",
        "scipy>=1.10",
        "trimesh>=4.0",
        "scikit-fmm>=2023.4",
        "shapely>=2.0,<3",
        # Basis Universal (HM3D .basis.glb textures): KTX2 and .basis -> RGBA
        "opengl-basisu==0.1.0a2",
        "moderngl>=5.8",
        "tqdm>=4.60",
        "imageio>=2.20",
        "matplotlib>=3.6",
        "pillow>=9",
        "openai>=1.40",
        "python-dotenv>=1.0",
    ],
    extras_require={
        "test": ["pytest>=7", "import-linter>=2.0", "alktx2==0.1.7"],  # alktx2: Basis encoder for test textures
        "baselines": [
            "habitat-baselines==0.3.320260507",
            "torch>=2.0",
            "torchvision>=0.15",
        ],
    },
    entry_points={
        "console_scripts": [
            "mosnav-eval=habitat_mosnav.evaluation.cli:main",
            "mosnav-aggregate=habitat_mosnav.evaluation.aggregate_cli:main",
            "mosnav-report=habitat_mosnav.evaluation.report:main",
            "mosnav-make-scenes=habitat_mosnav.scenes.cli:main",
            "mosnav-build=habitat_mosnav.dataset_building.cli:main",
        ]
    },
)
