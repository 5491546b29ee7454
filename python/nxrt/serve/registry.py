"""The models a server holds, by name."""

from .errors import ModelNotFound


class ModelRegistry:
    def __init__(self):
        self._models = {}

    def add(self, model):
        if model.name in self._models:
            raise ValueError(f"two models are named '{model.name}': give one --name")
        self._models[model.name] = model

    def get(self, name: str):
        model = self._models.get(name)
        if model is None:
            raise ModelNotFound(name)
        return model

    def known(self, name: str) -> bool:
        return name in self._models

    def names(self) -> list:
        return list(self._models)

    def all_ready(self) -> bool:
        return bool(self._models) and all(m.ready for m in self._models.values())

    def close(self):
        for m in self._models.values():
            if m.ready:
                m.close()
