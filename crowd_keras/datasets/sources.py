"""Where each public data set comes from, and the sha256 of every file the loaders read.

The checksums pin the files as this project distributes and tests them (the layout of
``CROWD_KERAS_DATA``, one folder per set). Where the original source serves those very files
(a repository at a fixed commit, or an archive whose members they are), its URL is given and
the download is checked against the same checksums; an archive is downloaded whole and its
members are checked after extraction. Where the files are a rewrite of the original (PICO in
JSON lines, two truth-inference sets in the common CSV layout, the bluebirds features), no
original URL serves them: such a file has ``url=None`` and comes from ``CROWD_KERAS_DATA`` or
a mirror (``CROWD_KERAS_MIRROR``) only. The URLs and checksums could not be checked against
the live sources when they were written down: a source that changed its files shows up as a
checksum error that names the URL.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, Optional, Tuple

__all__ = ["RemoteFile", "Archive", "DataSource", "SOURCES", "source"]


@dataclass(frozen=True)
class RemoteFile:
    """One file of a set: its sha256 and the URL that serves it (``None``: no known source
    serves it as it is)."""

    sha256: str
    url: Optional[str] = None


@dataclass(frozen=True)
class Archive:
    """An archive (``.tar.gz`` or ``.zip``) whose ``members`` (path in the archive -> file
    name in the set's folder) are files of a set."""

    url: str
    members: Dict[str, str]


@dataclass(frozen=True)
class DataSource:
    """A data set: its folder name (``"truth_inference/dog"``), files and origin."""

    name: str
    files: Dict[str, RemoteFile]
    homepage: str
    archive: Optional[Archive] = None
    optional: Tuple[str, ...] = field(default=())  # files the loader can do without


def _github(repo: str, commit: str, folder: str, files: Dict[str, str]) -> Dict[str, RemoteFile]:
    base = f"https://raw.githubusercontent.com/{repo}/{commit}/{folder}".replace(" ", "%20")
    return {name: RemoteFile(sha, f"{base}/{name}") for name, sha in files.items()}


# LabelMe as prepared for Rodrigues & Pereira (2018), VGG16 features pooled by Mena et al.
_LABELME = ("fmenat/PyLearningCrowds", "272bf1deb6237908262b8103ae0538ae08638f41", "data/LabelMe")
# The truth-inference survey's own repository (Zheng et al. 2017)
_TRUTH = ("zhydhkcws/crowd_truth_infer", "6dfcd829267d291b035405898b9a407e8a366241")
# A public research repository that vendored the WRENCH release (the release itself is on a
# file-sharing drive without stable file URLs)
_WRENCH = ("JerrryNie/DyGen", "41902c324779157a272548a008a6e487f6d81acc")
_WRENCH_HOME = "https://github.com/JieyuZ2/wrench"

_SETS = [
    DataSource("labelme", {
        **_github(*_LABELME, {
            "answers.txt": "354c282e10835a59962494acb1d180fe997b65a0aa1e27f870cdb4ef51ef3e2b",
            "LabelMe_Z_train.txt":
                "229556bdc5da327dd7d4e4154ba180969091c83f43cf8cbee3727131c5a062f6",
            "LabelMe_Z_valid.txt":
                "40aba43f903a539b38243c411e214da1f8c696cc47aa59811cc3388cc6899892",
            "LabelMe_Z_test.txt":
                "6d508b638d41fa84b2628615270456df96a49dce18054d201ac6261b03ea77bc",
            "LabelMe_VGG_avg_train.npy":
                "0ddfbcbd722aab70e81525a459cc37d47c1d344322b401ee35a3e9b158a209e8",
            "LabelMe_VGG_avg_valid.npy":
                "cb80ce99ef9fc80c666e6b9c43259ee0aac4e0cf82f8ac654b8bb309fb28953d",
            "LabelMe_VGG_avg_test.npy":
                "af407538f702f98e775f233652152cdcb58583c9d4668492308151c126ce7873"}),
        # the class names in code order; the loader knows them when the file is absent
        "classes.txt":
            RemoteFile("6425b593d24e71bc73559b2efce4f0597589f2cda45a4172d8d180b76011b8c4"),
    }, "http://fprodrigues.com/publications/deep-crowds/", optional=("classes.txt",)),
    DataSource("music", {
        "music_genre_annotations.csv":
            RemoteFile("c87c6cb597749130c905ed2481fc615c6193d022a540d1fce165bd8228bd7ab3"),
        "music_genre_gold.csv":
            RemoteFile("28cd73e9bf555e5847de0b0fc4c4998264d4a272d657c452edf2c93c206bda64"),
        "music_genre_test.csv":
            RemoteFile("952b423483bef4e0aa38b628815232b600a745d028fc8dfe8addd49e616931b8"),
    }, "http://fprodrigues.com/", archive=Archive(
        "http://fprodrigues.com/mturk-datasets.tar.gz", {
            "music_genre_classification/music_genre_mturk.csv": "music_genre_annotations.csv",
            "music_genre_classification/music_genre_gold.csv": "music_genre_gold.csv",
            "music_genre_classification/music_genre_test.csv": "music_genre_test.csv"})),
    DataSource("truth_inference/dog", _github(*_TRUTH, "datasets/s4_Dog data", {
        "answer.csv": "db11159198f59fa2af87450b008f860ca2e9e04e3f15c697ef254af40fb6763a",
        "truth.csv": "2a641fa31e80526164d956da4228f80d31b303c2691ab1855c76fef72d04b746"}),
        "https://github.com/zhydhkcws/crowd_truth_infer"),
    DataSource("truth_inference/bluebirds", {
        **_github(*_TRUTH, "datasets/d_Duck Identification", {
            "answer.csv": "0d5e423652c079361a4cbc0adbee0945d40f02a9dedcfb6b068e8f2af63b24f0",
            "truth.csv": "04c6d8b6cdc298b63c05dc87d28ceebd018d4207e0ced7c1229ca3593a74983a"}),
        # VGG16 features of the LIA authors' public code, rewritten to one .npz
        "vgg16_features.npz":
            RemoteFile("8a91bbf4f96f1c2d1dd0c3cbcfe40773f7ed0c7a35f8a7dd778729928c2a4fd4"),
    }, "https://github.com/zhydhkcws/crowd_truth_infer", optional=("vgg16_features.npz",)),
    DataSource("truth_inference/product", _github(*_TRUTH, "datasets/d_jn-product", {
        "answer.csv": "ca69e3f2cba3d6f9c3b3ecc2f8d2a81afcd747d0b91aa5ab18608a5715e26adc",
        "truth.csv": "9a5757c726ef1a32b05f6a675924c483b24d602c61b1a2d087ab3d84f90b3766"}),
        "https://github.com/zhydhkcws/crowd_truth_infer"),
    DataSource("truth_inference/adult_content", {
        "answer.csv":
            RemoteFile("1781ea89e193b5d09a84db9ef5002fd4eb277b2109606891e61c47117c0c5d2d"),
        "truth.csv": RemoteFile("395c88167c5be38a62be2f57230a80defded6fc4972e64ecb71f1ef3b6821b71"),
    }, "https://github.com/zhydhkcws/crowd_truth_infer"),
    DataSource("truth_inference/weather_sentiment", {
        "answer.csv":
            RemoteFile("9bd1b6fd80376a986ddc6983f820fb094e4a757ffda81385b72beaa376b589d0"),
        "truth.csv": RemoteFile("57c19d99a45183e6c871e15e5f2624d2481432461d520483f92f84ac4f9f73f8"),
    }, "https://github.com/zhydhkcws/crowd_truth_infer"),
    DataSource("wrench/youtube", _github(*_WRENCH, "datasets/youtube", {
        "train.json": "8c487acf4e3e16b340e28f3633d5613f83c4db2d3b287e4341c86ff8f2192705",
        "valid.json": "01d28d71c48e34bdde0566a9eead1d9694baa4eae176cea6d979bb59c4516df3",
        "test.json": "ef04412aee047657e41d7ad1411f11d05fce13b642bf1bec8897d138343ee12d",
        "label.json": "6837af4230238ed5c9d5d32ce309083b24491fe5d085f0b779298e7c67eeb74a"}),
        _WRENCH_HOME),
    DataSource("wrench/sms", _github(*_WRENCH, "datasets/sms", {
        "train.json": "9d77f52d2af078dbcecffad72c6b22cb6f8fe89c68db0ad99e811be06ec46800",
        "valid.json": "977a3b91bdbdb12186b44ee422a51eac85de343b8159e4973b16cf4b3d245d32",
        "test.json": "7a3fad03b9ad609e91a276e92b3bc31fbb8a48eacbc1bf42853cd440a4f6c080",
        "label.json": "5ba8069344eaf5578717910018232889bb77d6dad78b7fe7d002aeb089bc7efb"}),
        _WRENCH_HOME),
    DataSource("wrench/trec", _github(*_WRENCH, "datasets/trec", {
        "train.json": "92a1cfc914222003512efd69ee55bd89150bf42f35400c1325f861bfe2a0e350",
        "valid.json": "56b27e6796ecb4fe63d60060306bdb65dec6f8e5f345cdce068eb50a5f90b5c9",
        "test.json": "95b1a8fbefbeda9b75b96416814dd46794872809a2295832761b2a0b7bc5de3d",
        "label.json": "c5b6ea0cd3a4632639df7eea02f92640ffb561dd6421d831bad7544defdb2e71"}),
        _WRENCH_HOME),
    # PICO-data's own layout is one JSON file per split and a text file per abstract; the
    # loader reads the JSON-lines rewrite below (contents unchanged)
    DataSource("pico", {
        "docs.jsonl":
            RemoteFile("4d969a7f96f71f3145fb47893a181c0d5e570e630cc05423e2fd3f17dae6c4f1"),
        "crowd_train.jsonl":
            RemoteFile("af358886e5bedfc5e1a8aace9079722b44f4d936115e28c31314865897610374"),
        "crowd_dev.jsonl":
            RemoteFile("e153e68eeebefb19f9f08e1fb8f30c30bdd0a7160b648ee1ece581d120360812"),
        "crowd_test.jsonl":
            RemoteFile("52231ea245ea2bfce98be7e7ae670b630b08e9db12aebc891f07c6c0e1733898"),
        "crowd_acl17-test.jsonl":
            RemoteFile("4e8d3dffe3f1e764503595954903ce55c15f5e39e0c14c173425173b2cee43ac"),
        "gold_acl17_even.jsonl":
            RemoteFile("6e1755a4bf4fd8e880712a53104359c2bd74e4dce04ede912f7c563f7a36b193"),
        "authors_aggregates_acl17.jsonl":
            RemoteFile("febd0a86836e5a951ec4331c391bfd5eba042e0f9d1d26d2418d7d817fe64d3c"),
    }, "https://github.com/yinfeiy/PICO-data"),
    DataSource("youtube_spam", {
        "Youtube01-Psy.csv":
            RemoteFile("19797e6c77690e3c8809cfd2853ae7341390636367ba66cf5d4f4083f0b88535"),
        "Youtube02-KatyPerry.csv":
            RemoteFile("902c614f8ef24f987d6f614d7e6111aa5160b89a0646b68e007bd6044a3d123b"),
        "Youtube03-LMFAO.csv":
            RemoteFile("702ef589860a1831956f527760a3d9737ef8a07ab36c7de35b92b8898b8c3928"),
        "Youtube04-Eminem.csv":
            RemoteFile("92f54eb6b22fdf3b7ae85e1f500e5aa7442edd025e504b988a97078756187e76"),
        "Youtube05-Shakira.csv":
            RemoteFile("b66edbcbe6fa79875f0e24a3a0792f8acf079353d36ae6c5e3e8b5ef663783da"),
    }, "https://archive.ics.uci.edu/dataset/380/youtube+spam+collection", archive=Archive(
        "https://archive.ics.uci.edu/static/public/380/youtube+spam+collection.zip",
        {f"{n}.csv": f"{n}.csv" for n in ("Youtube01-Psy", "Youtube02-KatyPerry",
                                          "Youtube03-LMFAO", "Youtube04-Eminem",
                                          "Youtube05-Shakira")})),
]

#: Every set by its folder name under the data root.
SOURCES: Dict[str, DataSource] = {s.name: s for s in _SETS}


def source(name: str) -> DataSource:
    """The :class:`DataSource` of set ``name`` (``"labelme"``, ``"truth_inference/dog"``...)."""
    try:
        return SOURCES[name]
    except KeyError:
        raise ValueError(f"unknown data set {name!r}; known: {sorted(SOURCES)}") from None
