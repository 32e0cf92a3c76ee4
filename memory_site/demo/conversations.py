"""Demo data of the conversations app, written by `manage.py seed_demo` (idempotent).

The demo family's story, which memory_site/demo/facts.py and memory_site/demo/agent_memory.py tell too: Rose Whitfield,
alice's and bob's mother, was born in 1931 on a farm in Ohio, the eldest of four girls
(Margaret was the youngest). She married their father, Henry Whitfield, in June 1955 at the
little church on Main Street, was a nurse at St. Mary's Hospital in Dayton for thirty years,
retired in 1994 and moved to Florida, and died in 2019. The family's summer cabin is on Lake
Erie.
"""

from django.contrib.auth.models import AbstractBaseUser

from conversations import selectors, services
from conversations.models import Conversation, ConversationMemory
from facts.models import Legacy

DEMO_TITLE = "Remembering Mom (demo)"
BOB_DEMO_TITLE = "Mom's Sunday calls (demo)"

DEMO_TURNS = [
    ("Mom was a nurse at St. Mary's Hospital in Dayton for thirty years.",
     "Thirty years of caring for people. What did she love about it?"),
    ("She loved the night shift, it was quiet. Mom was born in 1931 on a farm in Ohio.",
     "A farm childhood! Did she keep any of that life later on?"),
    ("Every Sunday she baked bread for the whole street.",
     "That sounds like a lovely tradition. What else?"),
    ("Her favorite flower was the peony. She grew them by the back door.",
     "Peonies by the back door. Did she garden a lot?"),
    ("Mom loved gardening, especially in May. I still have her trowel.",
     "What a treasure to keep. How did she meet your father?"),
    ("Mom married Dad, Henry Whitfield, in June 1955 at the little church on Main Street.",
     "A church wedding in 1955. Do you have photos?"),
    ("Remind me to ask my aunt for the wedding photos.",
     "I'll keep that in mind. What was she like as a person?"),
    ("She was stubborn but incredibly generous.",
     "Stubborn and generous, a good combination. Any habits you remember?"),
    ("Mom always hummed Moon River while she cooked.",
     "Moon River while cooking, that's a lovely image."),
    ("She taught me to play the piano when I was six.",
     "Did you keep playing?"),
    ("I did, for a while. Mom played the piano at church every Christmas.",
     "Christmas at the piano. What songs?"),
    ("Mostly carols. She retired in 1993 and moved to Florida.",
     "Florida! Did she like it there?"),
    ("She hated the humidity but loved the beach.",
     "The beach must have been a comfort."),
    ("Mom passed away in 2019. We miss her every day.",
     "I'm so sorry. Thank you for sharing her with me."),
    ("Actually, she retired in 1994, not 1993.",
     "Thank you for the correction."),
    ("Mom had three sisters and she was the eldest.",
     "The eldest of four girls. Were they close?"),
    ("Very close. Mom called her sisters every Sunday night.",
     "Every Sunday night, what a steady bond."),
]

BOB_DEMO_TURNS = [
    ("Mom called her sister Margaret every Sunday evening.",
     "Every Sunday evening. What did they talk about?"),
    ("Mostly the farm and the kids. Margaret was the youngest of the four girls.",
     "The youngest of four. What else do you remember about your mom?"),
    ("Mom took her tea with honey, never sugar.",
     "Honey, never sugar. Did she keep things from those years?"),
    ("She kept every birthday card she was ever sent.",
     "Every single one? Where did she keep them?"),
    ("In shoe boxes in the hall closet. We found forty boxes after she died in 2019.",
     "Forty boxes of cards is a lot of love. Thank you for sharing her with me, Bob."),
]
# username → (title, turns): each member's closed conversation about the legacy.
DEMO_CONVERSATIONS = {
    "alice": (DEMO_TITLE, DEMO_TURNS),
    "bob": (BOB_DEMO_TITLE, BOB_DEMO_TURNS),
}


def seed(*, users: dict[str, AbstractBaseUser], legacy: Legacy,
         create: bool = True) -> list[str]:
    """A closed demo conversation of each demo member about the legacy; return lines to print.
    Without `create` (a later run of seed_demo), only what the jobs made of those still there:
    one the user deleted is not made again (its facts would be extracted again).

    Their rolling summaries, archived chunks and extracted facts are made by the jobs that the
    messages and the close enqueue after commit, as for any conversation (`make run`'s worker
    picks them up; the sweep would too)."""
    lines = []
    for username, (title, turns) in DEMO_CONVERSATIONS.items():
        user = users.get(username)
        if user is None:
            continue
        conversation = Conversation.objects.filter(user=user, legacy=legacy, title=title).first()
        if conversation is None and not create:
            continue
        if conversation is None:
            conversation = services.conversation_create(user=user, legacy=legacy, title=title)
            for said, answer in turns:
                services.message_append(conversation=conversation, role="user", content=said)
                services.message_append(conversation=conversation, role="assistant",
                                        content=answer)
            conversation = services.conversation_close(conversation=conversation)
        lines.append(
            f"Conversation {conversation.title!r} ({username}, closed): id={conversation.pk} "
            f"messages={conversation.message_count}{_progress(conversation)}"
        )
    return lines


def _progress(conversation: Conversation) -> str:
    """What the jobs have made of the conversation so far, for a second run of seed_demo."""
    summaries = selectors.rolling_summaries_for_conversation(conversation=conversation).filter(
        status=ConversationMemory.Status.COMPLETED
    ).count()
    chunks = selectors.archived_chunks_for_conversation(conversation=conversation).count()
    if not summaries and not chunks:
        return "; its summaries and chunks are made by the worker"
    archived = selectors.last_summarized_end(conversation=conversation)
    rest = "all archived" if archived >= conversation.message_count else "the worker does the rest"
    return f" summaries={summaries} chunks={chunks} ({rest})"
