"""homa-dpdk: the worker side of the homa-dpdk daemon's shared-memory interface.

A setup.py and no pyproject.toml on purpose: pip then builds the package
with the setuptools already installed, without build isolation, so
`pip install ./python` works offline (build isolation would fetch
setuptools from an index). Standard library only; numpy is optional.
"""

import os

from setuptools import setup

HERE = os.path.dirname(os.path.abspath(__file__))

with open(os.path.join(HERE, "README.md"), encoding="utf-8") as f:
    README = f.read()

setup(
    name="homa-dpdk",
    version="0.1.0",
    description="Python worker interface of the homa-dpdk daemon (shared-memory rings, Homa RPCs)",
    long_description=README,
    long_description_content_type="text/markdown",
    packages=["homa_dpdk"],
    python_requires=">=3.9",
    install_requires=[],
    classifiers=[
        "Programming Language :: Python :: 3",
        "Operating System :: POSIX :: Linux",
        "Intended Audience :: Science/Research",
        "Topic :: System :: Networking",
    ],
    zip_safe=False,
)
