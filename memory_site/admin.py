"""Admin of the project roof: an API token stays with the user it was made for."""

from django.contrib import admin
from rest_framework.authtoken.admin import TokenAdmin as BaseTokenAdmin
from rest_framework.authtoken.models import TokenProxy

admin.site.unregister(TokenProxy)


@admin.register(TokenProxy)
class TokenAdmin(BaseTokenAdmin):
    """DRF's token admin, with the token's user read-only once the token exists: a token moved
    to another user would act as them."""

    def get_readonly_fields(self, request, obj=None):
        fields = list(super().get_readonly_fields(request, obj))
        return [*fields, "user"] if obj is not None else fields
