"""habitat_mosnav: multi-object visual navigation (MOS/MOC) as a native Habitat-Lab plugin."""
from setuptools import find_packages, setup

setup(
    name="habitat_mosnav",
    version="0.1.0",
    description="Multi-object visual navigation benchmark (MOS/MOC) as a Habitat-Lab plugin",
    packages=find_packages(include=["habitat_mosnav", "habitat_mosnav.*"]),
    include_package_data=True,
    package_data={"habitat_mosnav": ["config/**/*.yaml", "data/**/*"]},
    python_requires=">=3.9",
    install_requires=[
        "habitat-lab==0.3.320260507",
        "numpy>=1.21,<2",
        "omegaconf>=2.3,<2.4",
        "hydra-core>=1.3,<1.4",
        "scipy>=1.10",
        "trimesh>=4.0",
        "scikit-fmm>=2023.4",
        "moderngl>=5.8",
        "tqdm>=4.60",
        "imageio>=2.20",
    ],
    extras_require={
        "test": ["pytest>=7"],
        "baselines": [
            "habitat-baselines==0.3.320260507",
            "torch>=2.0",
            "torchvision>=0.15",
        ],
    },
    entry_points={
        "console_scripts": [
            "mosnav-eval=habitat_mosnav.eval:main",
            "mosnav-aggregate=habitat_mosnav.evaluation.aggregate:main",
            "mosnav-make-scenes=habitat_mosnav.scenes.cli:main",
            "mosnav-build=habitat_mosnav.dataset_building.cli:main",
        ]
    },
)
