"""crowd-keras: train Keras models directly from the noisy labels of many annotators."""
from pathlib import Path

from setuptools import find_packages, setup

HERE = Path(__file__).parent

EXTRAS = {
    # snorkel needs torch: install torch==2.13.0 (CPU build) *before* this extra, or pip pulls
    # the multi-GB CUDA build (see README).
    "snorkel": ["snorkel>=0.10,<0.11"],
    "label-studio": ["label-studio-sdk>=2.1,<3"],
    "plot": ["matplotlib>=3.7"],
    "progress": ["tqdm>=4.60"],
    "bench": ["crowd-kit>=1.4", "scikit-learn>=1.3"],
    # crowd_keras.distributed: label models on Dask, sharded parquet files for training
    "dask": ["dask[dataframe]>=2025.1", "distributed>=2025.1", "pyarrow>=14"],
    # crowd_keras.sequences.formats: spans to and from spaCy Doc.spans / Doc.ents (a blank
    # pipeline: no model download)
    "spacy": ["spacy>=3.5,<4"],
}
EXTRAS["test"] = sorted({
    "pytest>=8", "hypothesis>=6.100", "tqdm>=4.60", "scikit-learn>=1.3",
    # the suite runs on two processes (tox.ini: -n 2), inside CI's 15 minutes on 2 cores
    "pytest-xdist>=3.5",
    # the classic label models are checked against crowd-kit's on the same crowds
    "crowd-kit>=1.4",
    # the Label Studio tests start a real server on loopback (about 1 GB; pins the SDK)
    "label-studio==1.23.2",
    *EXTRAS["snorkel"], *EXTRAS["label-studio"], *EXTRAS["plot"], *EXTRAS["dask"],
    *EXTRAS["spacy"],
})
EXTRAS["all"] = sorted({dep for deps in EXTRAS.values() for dep in deps})

setup(
    name="crowd-keras",
    version="0.1.0",
    description="Keras 3 layers and label models for learning from many noisy annotators",
    long_description=(HERE / "README.md").read_text(encoding="utf-8"),
    long_description_content_type="text/markdown",
    license="Apache-2.0",
    python_requires=">=3.10",
    packages=find_packages(include=["crowd_keras", "crowd_keras.*"])
    + ["crowd_keras.integrations", "crowd_keras.integrations.label_studio",
       "crowd_keras.integrations.snorkel"],
    # Adapters live in the top-level integrations/ folder and import as crowd_keras.integrations;
    # find_packages does not see them, so each sub-package is listed here too.
    package_dir={"crowd_keras.integrations": "integrations",
                 "crowd_keras.integrations.label_studio": "integrations/label_studio",
                 "crowd_keras.integrations.snorkel": "integrations/snorkel"},
    install_requires=[
        "keras>=3.5,<4",
        "tensorflow>=2.16",
        "numpy>=1.26,<2.3",
        "pandas>=2.0",
        "scipy>=1.10",
    ],
    extras_require=EXTRAS,
    entry_points={"console_scripts": ["crowd-keras=crowd_keras.cli:main"]},
    classifiers=[
        "Programming Language :: Python :: 3",
        "Framework :: Keras",
        "Topic :: Scientific/Engineering :: Artificial Intelligence",
    ],
)
