"""placeholder"""
from console.history.store_base import StoreBase


class DeleteMixin(StoreBase):
    pass
