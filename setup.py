"""crowd-keras: train Keras models directly from the noisy labels of many annotators."""
from pathlib import Path

from setuptools import find_packages, setup

HERE = Path(__file__).parent

KERAS = "keras>=3.5,<4"
EXTRAS = {
    # The Keras layers, losses and models: Keras 3 with one backend each. The core (label
    # models, Annotations, both command lines, the Label Studio reader) needs none of them.
    # "tensorflow" is the full wheel (CPU, and GPUs on Linux); "tensorflow-cpu" the CPU-only
    # wheel, half the size: both provide the `tensorflow` module, so install one of them.
    "tensorflow": [KERAS, "tensorflow>=2.16"],
    "tensorflow-cpu": [KERAS, "tensorflow-cpu>=2.16"],
    # Any torch build works; PyPI's plain `torch` is a CUDA build on Linux, a CPU build comes
    # from PyTorch's own index (docs/install.md).
    "torch": [KERAS, "torch>=2.1"],
    "jax": [KERAS, "jax>=0.4"],
    # snorkel needs torch: install a CPU torch *before* this extra, or pip pulls the
    # multi-GB CUDA build (docs/install.md).
    "snorkel": ["snorkel>=0.10,<0.11"],
    "label-studio": ["label-studio-sdk>=2.1,<3"],
    "plot": ["matplotlib>=3.7"],
    "progress": ["tqdm>=4.60"],
    "bench": ["crowd-kit>=1.4", "scikit-learn>=1.3", "cleanlab>=2.7"],
    # crowd_keras.distributed: label models on Dask, sharded parquet files for training
    "dask": ["dask[dataframe]>=2025.1", "distributed>=2025.1", "pyarrow>=14"],
    # the documentation site (mkdocs.yml, docs/): mkdocs serve / mkdocs build --strict
    "docs": ["mkdocs>=1.6,<2", "mkdocs-material>=9.5", "mkdocstrings[python]>=0.26"],
    # crowd_keras.sequences.formats: spans to and from spaCy Doc.spans / Doc.ents (a blank
    # pipeline: no model download)
    "spacy": ["spacy>=3.5,<4"],
}
EXTRAS["test"] = sorted({
    "pytest>=8", "hypothesis>=6.100", "tqdm>=4.60", "scikit-learn>=1.3",
    # crowd_keras.compat.cleanlab is checked against cleanlab's own output
    "cleanlab>=2.7",
    # the suite runs on two processes (tox.ini: -n 2), inside CI's 15 minutes on 2 cores
    "pytest-xdist>=3.5",
    # the classic label models are checked against crowd-kit's on the same crowds
    "crowd-kit>=1.4",
    # crowd_keras.agreement is checked against the reference alpha and Fleiss' kappa
    "krippendorff>=0.6", "statsmodels>=0.14",
    # the Label Studio tests start a real server on loopback (about 1 GB; pins the SDK)
    "label-studio==1.23.2",
    # the Keras tests: TensorFlow (the backend tests save with it and load on torch/jax);
    # jax so that the JAX backend tests run instead of skipping (torch comes first, .ci/run)
    *EXTRAS["tensorflow"], *EXTRAS["jax"],
    *EXTRAS["snorkel"], *EXTRAS["label-studio"], *EXTRAS["plot"], *EXTRAS["dask"],
    # tests/test_docs.py builds the site with --strict
    *EXTRAS["docs"],
    *EXTRAS["spacy"],
})
# everything but the CPU-only TensorFlow wheel (it provides the same module as "tensorflow")
EXTRAS["all"] = sorted({dep for name, deps in EXTRAS.items() if name != "tensorflow-cpu"
                        for dep in deps})

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
    # the light core; Keras and a backend come with an extra (see EXTRAS)
    install_requires=[
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
