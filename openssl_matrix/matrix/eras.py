"""What differs between OpenSSL eras: base images, Configure targets, engine switches, -march.

Pure functions over version numbers, used by the matrix model (to validate) and by
rendering (to build). Each fact says where it comes from; check it against the real
source tree before changing it.
"""

from __future__ import annotations

from openssl_matrix.core.version import series

ENGINES = ("afalg", "padlock", "devcrypto")

#: The default base image, for every release: the toolchain the release sweep proved
#: (bookworm's gcc 12 / perl 5.36 build 0.9.8 to 3.6 with the compat fixes in patches/),
#: and the one a machine without a registry can make (debootstrap + docker import).
#: The Debian release that shipped a series (its own gcc and perl) is opt-in, per version
#: or include rule: ``debian/eol:squeeze`` (0.9.8/1.0.0), ``wheezy`` (1.0.1),
#: ``stretch`` (1.0.2/1.1.0); those retired releases are published for amd64 only, and
#: their apt needs Acquire::Check-Valid-Until=false, which the toolchain image sets.
DEFAULT_BASE_IMAGE = "debian:bookworm"
ERA_IMAGES: dict[str, str] = {"0.9.8": "debian/eol:squeeze", "1.0.0": "debian/eol:squeeze",
                              "1.0.1": "debian/eol:wheezy", "1.0.2": "debian/eol:stretch",
                              "1.1.0": "debian/eol:stretch"}

#: gcc -march values of 32-bit-only CPUs: not valid with -m64.
MARCH_32BIT_ONLY = frozenset({
    "i386", "i486", "i586", "pentium", "pentium-mmx", "pentiumpro", "i686", "pentium2",
    "pentium3", "pentium3m", "pentium-m", "pentium4", "pentium4m", "prescott", "lakemont",
    "k6", "k6-2", "k6-3", "athlon", "athlon-tbird", "athlon-4", "athlon-xp", "athlon-mp",
    "winchip-c6", "winchip2", "c3", "c3-2", "geode",
})
#: x86-64 micro-architecture levels: gcc refuses them for 32-bit code.
MARCH_64BIT_ONLY = frozenset({"x86-64-v2", "x86-64-v3", "x86-64-v4"})



def era_base_image(arch: str) -> str:
    """The default base image for ``arch``: bookworm for every release (see
    DEFAULT_BASE_IMAGE)."""
    return DEFAULT_BASE_IMAGE if arch == "x86_64" else f"i386/{DEFAULT_BASE_IMAGE}"


def i386_name(image: str) -> str | None:
    """The i386 twin of an official-library image name (``debian:bookworm`` ->
    ``i386/debian:bookworm``), as Docker Hub publishes them; None for other names."""
    if image.startswith("i386/"):
        return image
    repo = image.split("@", 1)[0].split(":", 1)[0]
    if "/" in repo:
        return None
    return f"i386/{image}"


def configure_targets(arch: str) -> tuple[str, ...]:
    """The ``./Configure`` targets for ``arch`` in order of preference; the build's source
    stage uses the first one the release's Configure defines (dockerfiles/srcfacts.pl).
    ``./config`` is never used: it guesses the target from ``uname -m``, which says
    x86_64 inside an i386 container on an amd64 kernel.

    - x86_64: ``linux-x86_64`` (every release);
    - i386: ``linux-x86`` (Configurations/10-main.conf, 1.1.0 on: in every 1.1.0-3.6 tree
      swept), else ``linux-elf`` (Configure's own table, 0.9.8-1.0.2: in every tree of
      those swept; 1.1.0+ keep it as the generic ELF target, hence the order)."""
    return ("linux-x86_64",) if arch == "x86_64" else ("linux-x86", "linux-elf")


def engine_options(version: str, engine: str) -> tuple[str, ...]:
    """Configure arguments that build ``engine`` into ``version``; ValueError if it has none.

    - afalg: ``enable-afalgeng`` from 1.1.0 (engines/e_afalg.c; needs kernel headers
      >= 4.1; on by default on Linux, so this only makes it explicit).
    - padlock: built into libcrypto by default on x86 up to 1.0.2 (crypto/engine/
      eng_padlock.c, off only with ``no-hw``); ``enable-hw-padlock`` in 1.1.x;
      ``enable-padlockeng`` in 3.x (``hw-padlock`` is its deprecated alias).
    - devcrypto: ``enable-devcryptoeng`` from 1.1.1; before that the cryptodev engine
      is compiled on Linux only with ``-DHAVE_CRYPTODEV -DUSE_CRYPTODEV_DIGESTS``.
      Both need ``<crypto/cryptodev.h>`` (cryptodev-linux) in the base image.
    """
    s = series(version)
    if engine == "afalg":
        if s[:2] < (1, 1):
            raise ValueError(f"the afalg engine exists from OpenSSL 1.1.0, not in {version}")
        return ("enable-afalgeng",)
    if engine == "padlock":
        if s[:2] < (1, 1):
            return ()
        return ("enable-hw-padlock",) if s[0] < 3 else ("enable-padlockeng",)
    if engine == "devcrypto":
        if s < (1, 1, 1):
            return ("-DHAVE_CRYPTODEV", "-DUSE_CRYPTODEV_DIGESTS")
        return ("enable-devcryptoeng",)
    raise ValueError(f"unknown engine {engine!r} (known: {', '.join(ENGINES)})")


def march_problem(march: str, arch: str) -> str | None:
    """Why ``-march=march`` cannot build ``arch`` code (None if it can)."""
    if arch == "x86_64" and march in MARCH_32BIT_ONLY:
        return f"-march={march} is a 32-bit CPU: gcc refuses it for x86_64; use arch i386"
    if arch == "i386" and march in MARCH_64BIT_ONLY:
        return (f"-march={march} is an x86-64 level: gcc refuses it for 32-bit code; "
                "use arch x86_64")
    return None


def base_image_hint(image: str) -> str:
    """What to do when a base image is missing from the Docker engine."""
    if image.startswith("debian/eol:"):
        return (f"it is the era default for old series and comes from Docker Hub: `docker pull "
                f"{image}`; without a registry, build on an image you have instead: set "
                "base_image: debian:bookworm for the version (or in defaults) in the matrix; "
                "the compat patches in patches/ build the old series there")
    arch, _, rest = image.partition("/") if image.startswith("i386/") else ("amd64", "", image)
    suite = rest.split(":", 1)[1] if rest.startswith("debian:") and ":" in rest else "<suite>"
    return (f"pull it (`docker pull {image}`) or, without a registry, make it from Debian's "
            f"mirror: `debootstrap --variant=minbase --arch={arch} {suite} /tmp/rootfs "
            f"http://deb.debian.org/debian && tar -C /tmp/rootfs -c . | docker import - {image}`"
            " (`bash .ci/setup` does this for debian:bookworm and i386/debian:bookworm)")
