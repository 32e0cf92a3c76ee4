"""REST endpoints of legacies, their family and invitations, and legacy facts (seed 000)."""

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.base_user import AbstractBaseUser
from django.core.exceptions import PermissionDenied
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from facts import selectors, services
from facts.selectors import external_id_of
from facts.serializers import (
    ConflictSerializer,
    CorrectionUndoneSerializer,
    FactCreatedSerializer,
    FactInputSerializer,
    FactListQuerySerializer,
    FactSerializer,
    FactUpdateSerializer,
    FactVisibilitySerializer,
    FamilySerializer,
    InvitationInputSerializer,
    InvitationListSerializer,
    InvitationSentSerializer,
    InvitationSerializer,
    LegacyInputSerializer,
    LegacyInvitationListSerializer,
    LegacySerializer,
    MemberInputSerializer,
    MembershipEndedSerializer,
    MembershipSerializer,
)
from memory_site.core.api import error_responses, paginate, paginated


class LegacyListCreateApi(APIView):
    pagination_class = paginated("legacies")

    @extend_schema(
        summary="List my legacies",
        description="The legacies I belong to, by name, each with my `role` (owner or member). "
        "A page: `?limit=` and `?offset=`.",
        responses={200: LegacySerializer(many=True), **error_responses(401)},
    )
    def get(self, request: Request) -> Response:
        legacies = selectors.legacies_for_user(request.user).order_by("name", "created_at")
        return paginate(request, legacies, LegacySerializer, "legacies", view=self)

    @extend_schema(
        summary="Create a legacy",
        description="Any signed-in user may create one and becomes its owner. 400 for an empty "
        "or too long `name`.",
        request=LegacyInputSerializer,
        responses={201: LegacySerializer, **error_responses(400, 401)},
    )
    def post(self, request: Request) -> Response:
        data = LegacyInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        legacy = services.legacy_create(user=request.user, **data.validated_data)
        legacy = selectors.legacy_for_member(user=request.user, legacy_id=legacy.pk)
        return Response(LegacySerializer(legacy).data, status=status.HTTP_201_CREATED)


def _added_by_integration(request: Request, username: str) -> bool:
    """Whether the request came through an integration credential that holds the consent of
    `username` to join a family: one of the DRF authentication classes named in
    settings.FAMILY_DIRECT_ADD_AUTHENTICATORS, which, if it has a `may_add_member(request,
    username)`, also agrees (a platform key: only its own platform's users). Sessions and API
    tokens never do."""
    authenticator = request.successful_authenticator
    if authenticator is None:
        return False
    name = f"{type(authenticator).__module__}.{type(authenticator).__qualname__}"
    if name not in settings.FAMILY_DIRECT_ADD_AUTHENTICATORS:
        return False
    may_add = getattr(authenticator, "may_add_member", None)
    return may_add is None or may_add(request, username)


def _named(request: Request, username: str, *, provision: bool = True) -> str:
    """The username a family call names, as the request's authentication class reads it: a
    platform key names its users by their external id, and `me` in any case as the caller
    (`member_username`); a session or an API token by username."""
    read = getattr(request.successful_authenticator, "member_username", None)
    return username if read is None else read(request, username, provision=provision)


class LegacyMemberListCreateApi(APIView):
    @extend_schema(
        summary="List the family of a legacy",
        description="Every member of the legacy with their `role` (owner or member) and when "
        "they joined, longest-standing first. Any member may list; 404 for a legacy I do not "
        "belong to.",
        responses={200: FamilySerializer, **error_responses(401, 404)},
    )
    def get(self, request: Request, legacy_id: str) -> Response:
        legacy = selectors.legacy_for_member(user=request.user, legacy_id=legacy_id)
        members = list(selectors.legacy_members(legacy=legacy))
        return Response(FamilySerializer({"members": members, "total": len(members)}).data)

    @extend_schema(
        summary="Add a member to a legacy directly",
        description="`{username, role}` (role `member`, the default, or `owner`). For platform "
        "integrations only, which hold their users' consent (the authentication classes of "
        "`FAMILY_DIRECT_ADD_AUTHENTICATORS`): a person's session or API token gets 403 "
        "`invitation_required` and invites instead (`POST /api/legacies/{id}/invitations`). "
        "A platform names its user by external id (`username`: what it sends as X-User-Id; "
        "provisioned on first mention). The caller must be the legacy's owner; 400 for an "
        "unknown username, 409 when that user already belongs to the legacy, 404 for a legacy "
        "I do not belong to.",
        request=MemberInputSerializer,
        responses={
            201: MembershipSerializer,
            **error_responses(
                400, 401, 403, 404, 409,
                descriptions={403: "Not a platform integration (`invitation_required`: invite "
                              "instead), or not the legacy's owner.",
                              409: "That user is already a member."},
            ),
        },
    )
    def post(self, request: Request, legacy_id: str) -> Response:
        legacy = selectors.legacy_for_member(user=request.user, legacy_id=legacy_id)
        data = MemberInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        # The owner first: a denied request provisions nobody (_named may).
        services.require_owner(legacy=legacy, user=request.user, action="add members")
        username = _named(request, data.validated_data["username"])
        if not _added_by_integration(request, username):
            raise services.InvitationRequired()
        membership = services.legacy_member_add(
            legacy=legacy, added_by=request.user, **{**data.validated_data, "username": username}
        )
        return Response(MembershipSerializer(membership).data, status=status.HTTP_201_CREATED)


def _ended(user: AbstractBaseUser, ended: services.MembershipLeft) -> Response:
    """Who left and who became owner, named as the family list names them (username and
    external id), however the request named them ("me", an external id in any case: found by
    an integrator, the answer echoed the path)."""
    heir = ended.new_owner
    body = {
        "username": user.get_username(), "external_id": external_id_of(user),
        "facts_made_private": ended.facts_made_private,
        "new_owner": heir.get_username() if heir is not None else None,
        "new_owner_external_id": external_id_of(heir) if heir is not None else None,
    }
    return Response(MembershipEndedSerializer(body).data)


class LegacyMemberLeaveApi(APIView):
    @extend_schema(
        summary="Leave a legacy's family",
        description="I leave the family: my shared facts about the legacy become private (they "
        "stay mine, in my export); my conversations about it stay mine but cannot be opened "
        "while I am not a member. If I was its only owner, the longest-standing other member "
        "becomes owner (`new_owner`). 409 `last_member` when I am its only member; 404 for a "
        "legacy I do not belong to.",
        request=None,
        responses={200: MembershipEndedSerializer, **error_responses(401, 404, 409, descriptions={
            409: "`last_member`: the only member cannot leave; erase your data instead."})},
    )
    def delete(self, request: Request, legacy_id: str) -> Response:
        legacy = selectors.legacy_for_member(user=request.user, legacy_id=legacy_id)
        left = services.membership_leave(legacy=legacy, user=request.user)
        return _ended(request.user, left)


class LegacyMemberDetailApi(APIView):
    @extend_schema(
        summary="Remove a member from a legacy's family",
        description="An owner removes a member by username; what happens to them is what "
        "happens when a member leaves (their shared facts become private, their conversations "
        "stay theirs but closed). My own username is leaving. 403 for a caller who is not an "
        "owner, 404 when nobody of that username is a member or for a legacy I do not belong "
        "to, 409 `last_member` for the only member.",
        request=None,
        responses={200: MembershipEndedSerializer, **error_responses(401, 403, 404, 409, descriptions={
            403: "Only the legacy's owner removes members.",
            409: "`last_member`: the only member cannot leave."})},
    )
    def delete(self, request: Request, legacy_id: str, username: str) -> Response:
        legacy = selectors.legacy_for_member(user=request.user, legacy_id=legacy_id)
        named = _named(request, username, provision=False)
        removed = services.membership_remove(legacy=legacy, removed_by=request.user,
                                             username=named)
        return _ended(get_user_model().objects.get(username=named), removed)


class LegacyInvitationListCreateApi(APIView):
    @extend_schema(
        summary="List the pending invitations of a legacy",
        description="The legacy's invitations nobody has answered yet, oldest first, for its "
        "owners (403 for a member, 404 for a legacy I do not belong to). An invitation to a "
        "username with no account is listed like any other and never answered.",
        responses={200: LegacyInvitationListSerializer, **error_responses(401, 403, 404, descriptions={
            403: "Only the legacy's owner sees its invitations."})},
    )
    def get(self, request: Request, legacy_id: str) -> Response:
        legacy = selectors.legacy_for_member(user=request.user, legacy_id=legacy_id)
        if not selectors.is_legacy_owner(legacy=legacy, user=request.user):
            raise PermissionDenied("Only the legacy's owner can see its invitations.")
        invitations = list(selectors.legacy_pending_invitations(legacy=legacy))
        body = {"invitations": invitations, "total": len(invitations)}
        return Response(LegacyInvitationListSerializer(body).data)

    @extend_schema(
        summary="Invite someone to a legacy's family",
        description="`{username, role}` (role `member`, the default, or `owner`). The person "
        "becomes a member only by accepting (`POST /api/invitations/{id}/accept`). 202 with the "
        "same body whether or not an account of that name exists (an account of another "
        "platform, or of the dashboard for a platform's user, is as good as unknown). A "
        "platform names its users by external id. Only an owner invites (403 "
        "for a member, 404 for a legacy I do not belong to); 400 for bad input (and the "
        "username `me`, which the member paths read as the caller); 409 `already_member` (also "
        "for myself) or `already_invited` (a pending invitation of that username).",
        request=InvitationInputSerializer,
        responses={
            202: InvitationSentSerializer,
            **error_responses(400, 401, 403, 404, 409, descriptions={
                403: "Only the legacy's owner invites people.",
                409: "`already_member`, or `already_invited`: that username has a pending "
                "invitation."}),
        },
    )
    def post(self, request: Request, legacy_id: str) -> Response:
        legacy = selectors.legacy_for_member(user=request.user, legacy_id=legacy_id)
        data = InvitationInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        # The owner first: a denied request provisions nobody (_named may).
        services.require_owner(legacy=legacy, user=request.user, action="invite people")
        invitation = services.invitation_create(
            legacy=legacy, invited_by=request.user,
            **{**data.validated_data, "username": _named(request, data.validated_data["username"])},
        )
        body = {
            "username": invitation.username,
            "role": invitation.role,
            "detail": services.invitation_sent_message(invitation),
        }
        return Response(InvitationSentSerializer(body).data, status=status.HTTP_202_ACCEPTED)


class LegacyInvitationDetailApi(APIView):
    @extend_schema(
        summary="Withdraw a pending invitation",
        description="An owner withdraws an invitation of the legacy nobody has answered yet; "
        "the username may be invited again. 403 for a member, 404 for an unknown or answered "
        "invitation or a legacy I do not belong to.",
        request=None,
        responses={204: None, **error_responses(401, 403, 404, descriptions={
            403: "Only the legacy's owner withdraws invitations."})},
    )
    def delete(self, request: Request, legacy_id: str, invitation_id: str) -> Response:
        legacy = selectors.legacy_for_member(user=request.user, legacy_id=legacy_id)
        services.invitation_withdraw(
            legacy=legacy, withdrawn_by=request.user, invitation_id=invitation_id
        )
        return Response(status=status.HTTP_204_NO_CONTENT)


class InvitationListApi(APIView):
    @extend_schema(
        summary="List my pending invitations",
        description="The invitations to a family waiting for my answer, oldest first.",
        responses={200: InvitationListSerializer, **error_responses(401)},
    )
    def get(self, request: Request) -> Response:
        invitations = list(selectors.invitations_pending_for(request.user))
        body = {"invitations": invitations, "total": len(invitations)}
        return Response(InvitationListSerializer(body).data)


class InvitationAcceptApi(APIView):
    @extend_schema(
        summary="Accept an invitation",
        description="I join the legacy's family with the invitation's role: 201 with my "
        "membership. 404 for someone else's invitation or one whose legacy is gone; 409 "
        "`invitation_answered` when I have already answered it.",
        request=None,
        responses={201: MembershipSerializer, **error_responses(401, 404, 409, descriptions={
            409: "`invitation_answered`: already accepted or declined."})},
    )
    def post(self, request: Request, invitation_id: str) -> Response:
        invitation = selectors.invitation_for_invitee(
            user=request.user, invitation_id=invitation_id
        )
        membership = services.invitation_accept(invitation=invitation, user=request.user)
        return Response(MembershipSerializer(membership).data, status=status.HTTP_201_CREATED)


class InvitationDeclineApi(APIView):
    @extend_schema(
        summary="Decline an invitation",
        description="I do not join: 200 with the invitation, now `declined`; the owner may "
        "invite me again. 404 for someone else's invitation or one whose legacy is gone; 409 "
        "`invitation_answered` when I have already answered it.",
        request=None,
        responses={200: InvitationSerializer, **error_responses(401, 404, 409, descriptions={
            409: "`invitation_answered`: already accepted or declined."})},
    )
    def post(self, request: Request, invitation_id: str) -> Response:
        invitation = selectors.invitation_for_invitee(
            user=request.user, invitation_id=invitation_id
        )
        invitation = services.invitation_decline(invitation=invitation, user=request.user)
        return Response(InvitationSerializer(invitation).data)


class LegacyFactListCreateApi(APIView):
    """My facts about a legacy plus every member's shared ones; add one by hand."""

    pagination_class = paginated("facts")

    @extend_schema(
        summary="List the facts of a legacy",
        description="My facts about the legacy plus every member's shared ones, filtered by "
        "`category`, `visibility`, `mine` and `q` (text). Current facts only, unless "
        "`include_corrected=true`: then also the facts a later fact of their author corrected "
        "(`is_current: false`, `superseded_by`). Each fact lists in `corrects` the earlier "
        "values it corrected that I may see. Any member may list; 404 for a "
        "legacy I do not belong to. A page: `?limit=` and `?offset=`.",
        parameters=[FactListQuerySerializer],
        responses={200: FactSerializer(many=True), **error_responses(400, 401, 404)},
    )
    def get(self, request: Request, legacy_id: str) -> Response:
        legacy = selectors.legacy_for_member(user=request.user, legacy_id=legacy_id)
        query = FactListQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        filters = query.validated_data
        facts = selectors.facts_filtered(
            user=request.user,
            legacy=legacy,
            category=filters.get("category"),
            visibility=filters.get("visibility"),
            mine=filters["mine"],
            text=filters.get("q"),
            include_corrected=filters["include_corrected"],
        )
        paginator = self.pagination_class()
        page = paginator.paginate_queryset(facts, request, view=self)
        corrections = selectors.fact_corrections_visible(user=request.user, facts=page)
        data = FactSerializer(
            page, many=True, context={"request": request, "corrections": corrections}
        ).data
        return paginator.get_paginated_response(data)

    @extend_schema(
        request=FactInputSerializer,
        responses={
            201: FactCreatedSerializer,
            200: FactCreatedSerializer,
            **error_responses(400, 401, 404),
        },
        summary="Add a fact by hand",
        description="Any member adds a fact of their own (`category`, `content`, "
        "`visibility`, private by default). 201 with the new fact; 200 with the existing fact, `duplicate: true` "
        "and a `message` when it duplicates one of mine (nothing is written). 404 for a legacy "
        "I do not belong to.",
    )
    def post(self, request: Request, legacy_id: str) -> Response:
        legacy = selectors.legacy_for_member(user=request.user, legacy_id=legacy_id)
        data = FactInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        fact, created = services.fact_create(
            legacy=legacy, user=request.user, **data.validated_data, as_member=True
        )
        body = FactCreatedSerializer(
            fact, context={"request": request, "duplicate": not created}
        ).data
        if not created:
            body["message"] = services.DUPLICATE_MESSAGE
        return Response(body, status=status.HTTP_201_CREATED if created else status.HTTP_200_OK)


class FactDetailApi(APIView):
    """Edit or delete one of my facts."""

    @extend_schema(
        summary="Edit one of my facts",
        description="Change a fact's `category` or `content` (its visibility has its own "
        "endpoint). Only its author may (403 for a fellow member's shared fact, 404 for one I "
        "cannot see).",
        request=FactUpdateSerializer,
        responses={200: FactSerializer, **error_responses(400, 401, 403, 404, descriptions={
            403: "Only the fact's author changes it."})},
    )
    def patch(self, request: Request, fact_id: str) -> Response:
        fact = selectors.fact_for_author(user=request.user, fact_id=fact_id)
        data = FactUpdateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        fact = services.fact_update(fact=fact, user=request.user, **data.validated_data)
        return Response(FactSerializer(fact, context={"request": request}).data)

    @extend_schema(
        summary="Delete one of my facts",
        description="Only its author may (403 for a fellow member's shared fact, 404 for one I "
        "cannot see).",
        responses={204: None, **error_responses(401, 403, 404, descriptions={
            403: "Only the fact's author deletes it."})},
    )
    def delete(self, request: Request, fact_id: str) -> Response:
        fact = selectors.fact_for_author(user=request.user, fact_id=fact_id)
        services.fact_delete(fact=fact, user=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)


class FactVisibilityApi(APIView):
    """Share one of my facts with every member of the legacy, or make it private again."""

    @extend_schema(
        summary="Share or unshare one of my facts",
        description="`{visibility: shared | private}`: a shared fact is seen by every member of "
        "the legacy and marked as shared in the agent's prompt. Only its author may (403 for a "
        "fellow member's shared fact).",
        request=FactVisibilitySerializer,
        responses={200: FactSerializer, **error_responses(400, 401, 403, 404, descriptions={
            403: "Only the fact's author shares it."})},
    )
    def patch(self, request: Request, fact_id: str) -> Response:
        fact = selectors.fact_for_author(user=request.user, fact_id=fact_id)
        data = FactVisibilitySerializer(data=request.data)
        data.is_valid(raise_exception=True)
        fact = services.fact_set_visibility(
            fact=fact, user=request.user, visibility=data.validated_data["visibility"]
        )
        return Response(FactSerializer(fact, context={"request": request}).data)


class FactCorrectionUndoApi(APIView):
    """Undo the correction one of my facts made."""

    @extend_schema(
        summary="Undo a correction",
        description="The fact (a correction, `corrects` not empty) is deleted and the fact(s) it "
        "corrected are current again, exactly as they were. 200 with them. Only its author may "
        "(403 for a fellow member's shared fact, 404 for one I cannot see); 409 "
        "`not_a_correction` when the fact corrected nothing, 409 `correction_corrected` when a "
        "later fact corrected it in turn (undo that one first). A refused request changes "
        "nothing.",
        request=None,
        responses={200: CorrectionUndoneSerializer, **error_responses(
            401, 403, 404, 409, descriptions={
                403: "Only the fact's author undoes its correction.",
                409: "`not_a_correction` or `correction_corrected`."})},
    )
    def post(self, request: Request, fact_id: str) -> Response:
        fact = selectors.fact_for_author(user=request.user, fact_id=fact_id)
        undone = services.fact_correction_undo(fact=fact, user=request.user)
        corrections = selectors.fact_corrections_visible(user=request.user, facts=undone.restored)
        body = {"restored": undone.restored, "removed_fact_id": fact.pk if undone.removed else None}
        return Response(CorrectionUndoneSerializer(
            body, context={"request": request, "corrections": corrections}).data)


class LegacyFactConflictListApi(APIView):
    """Where members remember a legacy differently."""

    pagination_class = paginated("conflicts")

    @extend_schema(
        summary="List the conflicts between members' facts",
        description="Pairs of current facts of two members that state different values of one "
        "attribute (born, married or died in another year or place, another place among the "
        "siblings …), oldest first. Nothing is resolved automatically. A conflict is listed "
        "only when I may see both of its facts (mine or shared), so it never reveals another "
        "member's private fact. 404 for a legacy I do not belong to. A page: `?limit=` and "
        "`?offset=`.",
        responses={200: ConflictSerializer(many=True), **error_responses(400, 401, 404)},
    )
    def get(self, request: Request, legacy_id: str) -> Response:
        legacy = selectors.legacy_for_member(user=request.user, legacy_id=legacy_id)
        paginator = self.pagination_class()
        page = paginator.paginate_queryset(
            selectors.conflicts_visible_to(request.user, legacy), request, view=self)
        conflicts = [
            {"id": c.pk, "attribute": c.attribute, "facts": [c.fact_a, c.fact_b],
             "detected_at": c.detected_at}
            for c in page
        ]
        facts = [fact for conflict in conflicts for fact in conflict["facts"]]
        corrections = selectors.fact_corrections_visible(user=request.user, facts=facts)
        return paginator.get_paginated_response(ConflictSerializer(
            conflicts, many=True,
            context={"request": request, "corrections": corrections}).data)
