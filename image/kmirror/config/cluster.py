"""How to reach one cluster: its bootstrap servers and librdkafka settings, per client role."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal

from kmirror.config import oauth
from kmirror.config.secret import Secret
from kmirror.errors import ConfigError

Role = Literal["consumer", "producer", "admin"]
ConfValue = str | Secret


@dataclass(frozen=True)
class ClusterConfig:
    """How to reach one cluster. All keys are librdkafka keys (dialects translate Java keys)."""

    alias: str
    bootstrap_servers: str
    common: Mapping[str, ConfValue] = field(default_factory=dict)
    consumer: Mapping[str, ConfValue] = field(default_factory=dict)
    producer: Mapping[str, ConfValue] = field(default_factory=dict)
    admin: Mapping[str, ConfValue] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.bootstrap_servers.strip():
            raise ConfigError(
                f"cluster '{self.alias}' has no bootstrap servers: set its bootstrap.servers "
                "(host:port[,host:port])"
            )
        for server in self.bootstrap_servers.split(","):
            host, _, port = server.strip().rpartition(":")
            if not host or not port.isdigit():
                raise ConfigError(
                    f"cluster '{self.alias}': bootstrap server '{server.strip()}' is not host:port"
                )
        for name in ("common", "consumer", "producer", "admin"):
            object.__setattr__(self, name, MappingProxyType(dict(getattr(self, name))))
            if name != "common":
                conf = {**self.common, **getattr(self, name)}
                oauth.check(conf, self.bootstrap_servers, f"cluster '{self.alias}'")

    def __reduce__(self) -> tuple[Any, ...]:
        # MappingProxyType does not pickle; stream processes receive the config by pickle.
        return (
            ClusterConfig,
            (
                self.alias,
                self.bootstrap_servers,
                dict(self.common),
                dict(self.consumer),
                dict(self.producer),
                dict(self.admin),
            ),
        )

    @property
    def servers(self) -> frozenset[str]:
        """The bootstrap servers as a set, to tell whether two configurations name the same
        cluster (order and case do not matter)."""
        return frozenset(s.strip().lower() for s in self.bootstrap_servers.split(",") if s.strip())

    def client_conf(self, role: Role) -> dict[str, ConfValue]:
        """Sealed librdkafka config for one client role (secrets still wrapped)."""
        extra = {"consumer": self.consumer, "producer": self.producer, "admin": self.admin}[role]
        return {"bootstrap.servers": self.bootstrap_servers, **self.common, **extra}

    @property
    def security_protocol(self) -> str:
        return str(self.common.get("security.protocol", "plaintext")).upper()
