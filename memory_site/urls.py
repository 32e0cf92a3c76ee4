"""Root URLconf: the REST API under /api/, the dashboard, the admin and health."""

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.templatetags.static import static
from django.urls import include, path
from django.utils.functional import lazy
from django.views.generic import RedirectView
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from memory_site import views
from memory_site.privacy import apis as privacy_apis

urlpatterns = [
    path("healthz", views.healthz, name="healthz"),
    # Browsers ask for /favicon.ico whatever the page links to. Lazy: STATIC_URL is read at
    # the first request, not at import.
    path("favicon.ico", RedirectView.as_view(url=lazy(static, str)("favicon.svg"))),
    path("admin/", admin.site.urls),
    path("api/schema", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs", SpectacularSwaggerView.as_view(url_name="schema"), name="api-docs"),
    path("api/", include("facts.api_urls")),
    path("api/", include("conversations.api_urls")),
    path("api/me/data", privacy_apis.MyDataApi.as_view(), name="me-data"),
    path("api/", include("memory_site.platforms.api_urls")),
    path(
        "accounts/login/",
        auth_views.LoginView.as_view(template_name="registration/login.html"),
        name="login",
    ),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("", include("facts.urls")),
    path("", include("conversations.urls")),
    path("", include("agent_memory.urls")),
]

handler404 = "memory_site.views.not_found"
handler500 = "memory_site.views.server_error"
