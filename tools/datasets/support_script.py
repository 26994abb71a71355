"""support_chat: a customer of an invented fibre provider chats with support for an evening.

Facts are planted early (account, address, router serial, when the drops started, gate
code, ...), a few change later (the callback number), and probes at the end ask for them.
"""

from __future__ import annotations

import json
import random

from harpe_lab.conversation import Conversation

WHAT = """
A long live-chat between Priya Raman, a customer of the invented provider Northwind Fiber,
and a support agent (Sam) with account tools: identity checks, an evening connection drop
that is traced to the fibre line, a technician visit, a billing dispute with a credit,
parental controls, a mesh extender and a possible move. Short chatty messages alternate
with long tool results (line status, the router's event log, invoices). Facts the customer
or the tools give early — account number, address, router serial, when the drops began, the
gate code, the ticket number — are asked for by probes near the end; the callback number is
changed half-way, so its probe's answer is the newer number.
"""

HOW = """
The dialogue is a fixed script written for harpe_lab (`tools/datasets/support_script.py`); a
seeded generator adds the routine back-and-forth of a real support chat (speed tests with
varying numbers, "still there?", reboot checks) so the conversation passes 150 turns. Tool
results (account lookup, line status, event log, invoices, availability) are generated
text in the shape such tools print. No usage is recorded: a replay counts tokens itself.
"""

SYSTEM = (
    "You are Sam, a support agent for Northwind Fiber. Verify the customer's identity before "
    "discussing the account. Use the tools to look things up; never guess account data. Be brief and warm."
)

ACCOUNT = "NWF-4471-2290"
SERIAL = "AX55-9F31-7720"
TICKET = "TCK-558203"


def _event_log(r: random.Random) -> str:
    lines = ["Archer AX55 system log (most recent last)", "time                 level  module   message"]
    clock = [17, 2, 11]
    for day, label in ((8, "Sat"), (9, "Sun"), (10, "Mon"), (11, "Tue"), (12, "Wed"), (13, "Thu")):
        clock = [17, r.randint(0, 20), r.randint(0, 59)]
        for _ in range(r.randint(5, 8)):
            clock[2] += r.randint(1, 9)
            if clock[2] >= 60:
                clock[2] -= 60
                clock[1] += 1
            if clock[1] >= 60:
                clock[1] -= 60
                clock[0] += 1
            stamp = f"2025-03-{day:02d} {clock[0]:02d}:{clock[1]:02d}:{clock[2]:02d}"
            msg = r.choice([
                ("INFO", "dhcpd", f"lease renewed for 192.168.0.{r.randint(20, 90)} ({r.choice(['iPad', 'Pixel-7', 'LAPTOP-PR', 'TV-LIVING'])})"),
                ("INFO", "wifi", f"5G client associated, RSSI -{r.randint(48, 67)} dBm"),
                ("INFO", "wifi", f"2.4G channel utilisation {r.randint(22, 61)}%"),
                ("INFO", "ntp", "time synchronised with pool.ntp.org"),
                ("INFO", "wan", "PPPoE keepalive ok"),
            ])
            lines.append(f"{stamp}  {msg[0]:<5}  {msg[1]:<7}  {msg[2]}")
        if day >= 11:
            for minute, second in ((41, 7), (52, 33)) if day == 11 else ((40 + r.randint(0, 5), r.randint(0, 59)),):
                lines.append(f"2025-03-{day:02d} 19:{minute:02d}:{second:02d}  WARN   wan      link down: PPPoE session lost (LCP timeout)")
                lines.append(f"2025-03-{day:02d} 19:{minute:02d}:{min(second + 4, 59):02d}  WARN   wan      ONT reports LOS (loss of signal)")
                lines.append(f"2025-03-{day:02d} 19:{minute + 2:02d}:{second:02d}  INFO   wan      link up: PPPoE session established, IP 100.64.{r.randint(1, 200)}.{r.randint(2, 250)}")
        lines.append(f"2025-03-{day:02d} 23:59:59  INFO   sys      daily stats: uptime {r.randint(80, 99)}.{r.randint(0, 9)}%, reboots 0")
    return "\n".join(lines)


def _invoices() -> str:
    rows = [
        ("INV-2025-01", "2025-01-05", "Fiber 500 (monthly)", "64.99"),
        ("INV-2025-01", "2025-01-05", "Stream Plus add-on", "12.99"),
        ("INV-2025-01", "2025-01-05", "Router rental", "0.00"),
        ("INV-2025-02", "2025-02-05", "Fiber 500 (monthly)", "64.99"),
        ("INV-2025-02", "2025-02-05", "Stream Plus add-on", "12.99"),
        ("INV-2025-02", "2025-02-05", "Stream Plus add-on", "12.99"),
        ("INV-2025-02", "2025-02-05", "Router rental", "0.00"),
        ("INV-2025-03", "2025-03-05", "Fiber 500 (monthly)", "64.99"),
        ("INV-2025-03", "2025-03-05", "Stream Plus add-on", "12.99"),
        ("INV-2025-03", "2025-03-05", "Router rental", "0.00"),
    ]
    out = ["invoice       date        item                      amount   status"]
    for inv, date, item, amount in rows:
        out.append(f"{inv:<13} {date}  {item:<24} {amount:>7}  paid (card ending 0193)")
    out.append("")
    out.append("totals: INV-2025-01 77.98 | INV-2025-02 90.97 | INV-2025-03 77.98")
    out.append("payment method: Visa ending 0193, autopay on the 5th")
    return "\n".join(out)


def build(s, r: random.Random) -> Conversation:  # s: make_datasets.Script
    t = s.turn
    # --- opening and identity -------------------------------------------------------------
    t("hi, is this the right place for internet problems?",
      "Hi, you've reached Northwind Fiber support, I'm Sam. Yes, I can help with internet problems. Who am I chatting with today?")
    t("Priya Raman. the account is in my name",
      "Thanks, Priya. To pull up the account I'll need the account number, or the phone number on file.")
    t(f"account number is {ACCOUNT}",
      "Got it, one moment while I look that up.",
      tools=[("", [("lookup_account", {"account": ACCOUNT}, json.dumps({
          "account": ACCOUNT, "holder": "Priya Raman", "status": "active", "since": "2021-08-14",
          "plan": "Fiber 500", "monthly_price": "64.99", "add_ons": ["Stream Plus"],
          "service_address": "18 Larkspur Lane, Apt 3B, Eastbridge",
          "phone_on_file": "(555) 014-2297", "equipment": [{"type": "router", "model": "Archer AX55", "owned": "rented"},
                                                           {"type": "ont", "model": "NW-ONT-G2", "owned": "rented"}],
          "open_tickets": [], "notes": "prefers chat; paperless billing"}, indent=2))])],
      facts={"account": "user", "plan": "tool:0"})
    t("ok",
      "I found an account for Priya Raman. For security, can you confirm the service address?")
    t("18 Larkspur Lane, Apt 3B, Eastbridge",
      "Thank you, that matches. And the best callback number in case we get disconnected?",
      facts={"address": "user"})
    t("(555) 014-2297, same as on the account",
      "Perfect, you're verified. What's going on with the internet?",
      facts={"phone": "user"})
    t("it keeps dropping in the evening. every night this week, maybe 2 or 3 times, for a couple of minutes each time",
      "I'm sorry, that's frustrating, especially if it happens at the same time each night. When did you first notice it?")
    t("Tuesday. around 7:40 pm, I was on a video call and it just died",
      "Thanks, Tuesday around 7:40 pm is a useful starting point. Has it happened every evening since then?",
      facts={"outage_start": "user"})
    t("yes every evening, mostly between 7:30 and 8",
      "That pattern helps. Is it only Wi-Fi, or do wired devices drop too?")
    t("not sure, everything is on wifi except the TV box",
      "Does the TV box lose its picture at the same time, or does it keep playing?")
    t("now that you mention it the tv froze on Wednesday too",
      "Then it's likely the connection itself and not just the Wi-Fi. Can you tell me the model of your router? It's on a sticker underneath.")
    t(f"it says Archer AX55. serial {SERIAL}",
      "Thank you. That's the router we rent you, so I can see it from here.",
      facts={"serial": "user"})
    t("I work from home so this is a big deal. I do medical transcription and upload audio files all evening",
      "Understood, a stable upload matters for you. Let's find the cause. I'd like to check your line from our side first, is that ok?")
    t("go ahead",
      "Running a line check now.",
      tools=[("", [("check_line_status", {"account": ACCOUNT}, "\n".join([
          "ONT NW-ONT-G2  port 1/3/07  olt EB-OLT-02",
          "optical rx power     -19.8 dBm   (normal -8 to -25)",
          "optical tx power       2.1 dBm",
          "ONT temperature       41 C",
          "link state            UP since 2025-03-13 19:44:12",
          "LOS events (7 days)   6",
          "  2025-03-11 19:41:07  duration 2m 03s",
          "  2025-03-11 19:52:33  duration 1m 58s",
          "  2025-03-12 19:43:51  duration 2m 10s",
          "  2025-03-12 19:58:02  duration 1m 47s",
          "  2025-03-13 19:40:19  duration 2m 01s",
          "  2025-03-13 19:44:09  duration 0m 03s",
          "neighbours on same splitter: 2 of 8 reported LOS at the same times",
      ]))])],
      facts={"los_count": "tool:0"})
    t("what does that mean",
      "Your line lost signal six times in the last week, all in the evening, starting Tuesday at 7:41 pm. Two neighbours on the same splitter saw the same drops, so this looks like a fault on our fibre outside your home, not your router.")
    t("so it's not my fault? I already restarted the router like 10 times",
      "Definitely not your fault, and restarting wouldn't have fixed it. I'd still like to see your router's log to be thorough. Can you open 192.168.0.1 in a browser?")
    t("one sec",
      "Sure, take your time.")
    t("ok I'm in. it asks for a password",
      "The admin password is on the same sticker as the serial, labelled 'Admin PW'.")
    t("got it. now what",
      "Go to Advanced, then System, then System Log, and press Export. I'll pull the log from my side at the same time, it's quicker.",
      tools=[("Pulling the router log remotely.", [("fetch_router_log", {"serial": SERIAL, "days": 6}, _event_log(r))])])
    t("I see a lot of stuff. should I send it?",
      "No need, I have it. It shows 'ONT reports LOS' right before each drop, which confirms the fibre losing signal. Your Wi-Fi itself looks healthy.")
    # routine back-and-forth: speed tests and checks (numbers vary by seed)
    def speed_tests(n: int, brb: bool = False) -> None:
        for k in range(n):
            down, up = r.randint(410, 495), r.randint(380, 470)
            t(r.choice(["ran a speed test", "did another test", "speed test again", "tested on the laptop"]) +
              f": {down} down, {up} up",
              r.choice([f"{down}/{up} is right where Fiber 500 should be when the line is up.",
                        f"Good, {down} down and {up} up is normal for your plan.",
                        "Those numbers are healthy, so the drops are the only problem."]))
            if brb and k == 2:
                t("brb someone at the door", "No problem, I'll wait.")
                t("back, sorry", "Welcome back! Let's continue.")

    speed_tests(6, brb=True)
    # --- the line drops during the chat --------------------------------------------------------
    t("WAIT it just dropped again. I'm on my phone now",
      "I see it too, checking the line live.",
      tools=[("", [("check_line_status", {"account": ACCOUNT, "live": True}, "\n".join([
          "ONT NW-ONT-G2  port 1/3/07  olt EB-OLT-02",
          "optical rx power     no signal",
          "link state            DOWN since 2025-03-13 19:58:41 (LOS)",
          "neighbours on same splitter: 2 of 8 in LOS now",
      ]))])])
    t("so it's happening right now?",
      "Yes, right now, and your neighbours on the same splitter dropped at the same second. That's a clear sign of the outside fibre.")
    for k in range(r.randint(3, 4)):
        t("lights on the white box are red" if k == 0 else r.choice(["still down", "nothing yet", "still red"]),
          r.choice(["Thanks for watching it. These drops have lasted about two minutes each, so it should come back shortly.",
                    "I'm watching it from here as well. It usually recovers on its own within a couple of minutes.",
                    "That red light is the ONT saying it has no signal from outside. Nothing to do on your side."]))
    t("back!! green again",
      "I see the link back up as well. Can you run one more speed test so we know it recovered fully?")
    speed_tests(4)
    # --- the fix ---------------------------------------------------------------------------
    t("so how do we fix it",
      "I'm opening a repair ticket for the line and booking a technician to check the fibre between the street cabinet and your building.",
      tools=[("", [("create_ticket", {"account": ACCOUNT, "category": "fibre_los", "summary":
                                        "Evening LOS on splitter EB-OLT-02 1/3/07, 6 events since 2025-03-11 19:41"},
                    json.dumps({"ticket": TICKET, "priority": "P2", "queue": "field-ops-east",
                                "created": "2025-03-13T20:06:44Z"}))])],
      facts={"ticket": "tool:0"})
    t("should I tell my neighbours? the lady downstairs complained about her internet too",
      "It would help. The ticket covers the whole splitter, so her line gets fixed with yours, but if she contacts us she can quote the ticket number.")
    t("can you add her to the ticket?",
      "I can't add another customer's account from your chat, for privacy. She can chat or call and we'll link her report in a minute.")
    t("ok I'll tell her",
      "Thank you, that really helps the field team.")
    t("what's the ticket number",
      f"It's {TICKET}. You can quote it if you call or chat again.")
    t("when can someone come",
      "Let me check the schedule.",
      tools=[("", [("find_appointments", {"area": "Eastbridge", "ticket": TICKET}, "\n".join([
          "available field visits (2h windows)",
          "Thu 2025-03-13  none",
          "Fri 2025-03-14  13:00-15:00  tech pool A",
          "Fri 2025-03-14  15:00-17:00  tech pool A",
          "Mon 2025-03-17  08:00-10:00  tech pool B",
          "Mon 2025-03-17  10:00-12:00  tech pool B",
      ]))])])
    t("Friday works. I have a call at 4 though",
      "Then Friday 1 to 3 pm is the better window. Shall I book it?")
    t("yes please",
      "Booked: Friday, March 14, between 1 and 3 pm.",
      tools=[("", [("book_appointment", {"ticket": TICKET, "slot": "2025-03-14T13:00/15:00"},
                    json.dumps({"confirmed": True, "window": "Fri 2025-03-14 13:00-15:00", "technician": "unassigned"}))])],
      facts={"appointment": "reply"})
    t("will they need to come inside?",
      "Probably only to the ONT on your wall, the white box where the fibre comes in. Most of the work is at the street cabinet. Is there anything the technician should know to get in?")
    t("the building has a gate. code is 4417#",
      "Thanks, I've added the gate code to the visit notes.",
      facts={"gate_code": "user"})
    t("also we have a dog, Biscuit. she's friendly but she barks a lot",
      "Noted: a friendly dog named Biscuit. Technicians appreciate the heads-up.",
      facts={"dog": "user"})
    t("will I get a text before they come?",
      "Yes, a text about 30 minutes before they arrive, to the number on file.")
    t("ok good. what do I do until Friday? my evenings are my busiest time",
      "Two options: we can send you a 5G backup hotspot by courier tomorrow at no cost, or I can add a credit for the disruption. Many people in your situation take both.")
    t("the hotspot would help. how fast is it",
      "Usually 50 to 150 Mbps depending on signal in your area. Enough for video calls and uploads, not as fast as fibre.")
    t("ok send it",
      "Done, the hotspot ships tomorrow morning and should arrive by 2 pm.",
      tools=[("", [("order_equipment", {"account": ACCOUNT, "item": "5G backup hotspot", "reason": TICKET},
                    json.dumps({"order": "ORD-77120", "carrier": "SwiftPost", "eta": "2025-03-14 14:00", "charge": "0.00"}))])])
    t("do I have to return it?",
      "Yes, within 14 days after the line is fixed. It comes with a prepaid return label.")
    for _ in range(3):
        t(r.choice(["ok", "alright", "got it", "makes sense"]),
          r.choice(["Anything else about the connection for now?", "Great. Is there anything else I can help with?",
                    "Good. Let me know if you have any other questions."]))
    # --- the hotspot and the uploads ------------------------------------------------------------
    t("how much data does the hotspot have? my audio files are big",
      "It's unlimited while your ticket is open. How big are the files usually?")
    t("around 300 to 600 MB each, 10 to 15 a night",
      "So up to about 9 GB a night. That's fine on the hotspot; at 50 Mbps upload a 600 MB file takes under two minutes.")
    t("and my transcription software resumes uploads if the connection drops?",
      "Most do. If yours doesn't, upload over the hotspot until Friday to avoid retries.")
    t("I'll check. it's called ScribeDesk",
      "I don't know ScribeDesk's settings, but look for 'resumable uploads' or 'retry on failure' in its preferences.")
    for k in range(3):
        size, secs = r.randint(310, 590), r.randint(38, 70)
        t(r.choice(["just uploaded one", "another upload done", "uploaded a test file"]) + f", {size} MB in {secs} seconds",
          f"That's about {size * 8 // secs} Mbps, very healthy while the line is up.")
    # --- billing ---------------------------------------------------------------------------
    t("actually yes. my February bill was higher than usual and I never figured out why",
      "Let me look at your recent invoices.",
      tools=[("", [("get_invoices", {"account": ACCOUNT, "months": 3}, _invoices())])])
    t("see, 90.97 in February",
      "You're right. February has the Stream Plus add-on charged twice, $12.99 extra. That's our mistake.")
    t("I knew it. can I get it back?",
      "Yes. I can refund the duplicate charge, and I'll add a credit for this week's outages as well.")
    t("how much for the outages?",
      "For six outage evenings we credit $10.51, which is the pro-rated service for those days plus a goodwill amount.")
    t("ok",
      "Applying both now.",
      tools=[("", [("apply_credit", {"account": ACCOUNT, "items": [{"reason": "duplicate Stream Plus Feb", "amount": "12.99"},
                                                                   {"reason": f"outage credit {TICKET}", "amount": "10.51"}]},
                    json.dumps({"credit_total": "23.50", "applies_to": "INV-2025-04", "reference": "CR-30418"}))])],
      facts={"credit": "tool:0"})
    t("so what will I see?",
      "A credit of $23.50 on your April statement, reference CR-30418.",
      facts={"credit_statement": "reply"})
    t("not a refund to my card?",
      "It goes on the next bill by default, which is quickest. If you prefer the card I can request that, it takes 5 to 7 business days.")
    t("the bill is fine",
      "Great, April statement it is.")
    t("while we're at it, is Stream Plus even worth it? I barely use it",
      "Stream Plus adds 40 channels and cloud DVR. If you mostly use apps on the TV box, you could drop it and save $12.99 a month.")
    t("let me think about that one",
      "Of course. You can remove it any time in the app under Plan, Add-ons.")
    # --- autopay card (a second knowledge update) --------------------------------------------
    t("oh and the card ending 0193 expires at the end of the month. can you switch autopay to my new card?",
      "Sure. For security I can't take full card numbers in chat, but I can send a secure link. Which card type and last four digits?")
    t("visa, ending 5521",
      "I've sent a secure link by email to update autopay to the Visa ending 5521.",
      tools=[("", [("send_payment_link", {"account": ACCOUNT, "purpose": "autopay update", "hint": "Visa ending 5521"},
                    json.dumps({"sent": True, "channel": "email", "expires_in_hours": 24}))])])
    t("done, I filled it in",
      "Confirmed: autopay now uses the Visa ending 5521, starting with the April bill.",
      tools=[("", [("get_payment_method", {"account": ACCOUNT}, json.dumps({"autopay": True, "method": "Visa ending 5521",
                                                                            "previous": "Visa ending 0193", "day": 5}))])],
      facts={"card_new": "reply"})
    t("and the 23.50 still comes off?",
      "Yes, the credit comes off the April bill first, then autopay charges the new card for the rest.")
    # --- the TV box ------------------------------------------------------------------------
    t("since I have you, the TV box is slow to start in the mornings. like 3 minutes on the logo",
      "Let me check the box's status.",
      tools=[("", [("device_status", {"account": ACCOUNT, "device": "TV-LIVING"}, "\n".join([
          "device        Northwind TV box NTB-4 (rented)",
          "firmware      4.2.7   (latest 4.3.1, released 2025-02-20)",
          "uptime        19 d 04 h",
          "storage       7.1 of 8.0 GB used (DVR cache 5.6 GB)",
          "boot time     avg 164 s (fleet median 38 s)",
          "last errors   2025-03-12 07:02  EPG download retry x3",
          "              2025-03-13 06:58  EPG download retry x2",
      ]))])])
    t("is that bad",
      "The box is two firmware versions behind and its storage is almost full, which slows the start. An update and clearing the DVR cache should fix it.")
    t("will I lose my recordings?",
      "No, clearing the cache keeps your recordings; it only removes temporary guide data and thumbnails.")
    t("ok do it",
      "Pushing firmware 4.3.1 tonight at 3 am and clearing the cache now.",
      tools=[("", [("push_firmware", {"device": "TV-LIVING", "version": "4.3.1", "when": "2025-03-14T03:00"},
                    json.dumps({"scheduled": True})),
                   ("clear_cache", {"device": "TV-LIVING", "scope": "dvr_cache"},
                    json.dumps({"freed_gb": 5.4, "recordings_kept": 23}))])])
    t("23 recordings, wow, I should watch some of those",
      "Ha, that's a nice backlog. The box restarts once tonight for the update; leave it plugged in.")
    t("thanks",
      "You're welcome! Tomorrow morning it should start in well under a minute.")
    # --- the printer -----------------------------------------------------------------------
    t("ok so this might not be you but the printer says offline half the time",
      "I can at least see whether it's on the network. Is it the HP Envy?")
    t("yes the envy 6000",
      "Your router last saw HP-ENVY-6000 three hours ago on the 2.4 GHz band, so it's dropping off the Wi-Fi, not the internet.",
      tools=[("", [("device_history", {"serial": SERIAL, "device": "HP-ENVY-6000", "days": 2}, "\n".join(
          [f"2025-03-{12 + d // 24:02d} {d % 24:02d}:{r.randint(0, 59):02d}  {'joined' if d % 3 else 'left  '}  2.4G  RSSI -{r.randint(70, 84)} dBm"
           for d in range(0, 40, 2)]))])])
    t("why would it do that",
      "Its signal is around -80 dBm, which is weak, and printers go to sleep and sometimes fail to rejoin. Where is it?")
    t("in the back bedroom, where the wifi is bad",
      "Then the mesh extender on Friday should fix the printer too. Until then, moving it closer to the router would help.")
    t("it's heavy, I'll wait for Friday",
      "Fair enough! I'll add a note for Luis to check the printer reconnects after the extender is in.",
      tools=[("", [("update_visit", {"ticket": TICKET, "add": ["check HP Envy 6000 on mesh"]},
                    json.dumps({"ok": True, "items": ["fibre repair", "Mesh Point M2 install", "check HP Envy 6000 on mesh"]}))])])
    t("you're thorough",
      "That's the job! Anything else while we're at it?")
    # --- email forwarding ------------------------------------------------------------------
    t("last thing for real. I still have an old northwind email address from years ago. can it forward to my gmail?",
      "Yes. Which address is it?")
    t("priya.r@northwind.example",
      "Setting up forwarding. What's the destination address?")
    t("priya.raman.transcripts@gmail.example",
      "Done, mail to priya.r@northwind.example now forwards there.",
      tools=[("", [("set_forwarding", {"mailbox": "priya.r@northwind.example", "to": "priya.raman.transcripts@gmail.example",
                                        "keep_copy": True},
                    json.dumps({"ok": True, "keep_copy": True}))])])
    t("does it keep a copy?",
      "Yes, a copy stays in the Northwind mailbox too, in case you need it later.")
    # --- parental controls -----------------------------------------------------------------
    t("different question. my son's tablet, can I turn off wifi for it at night?",
      "Yes, the router has parental controls. What's the device called on your network?")
    t("Arjun's iPad I think",
      "I can see 'Arjun's iPad' connected. What hours should it be blocked?",
      tools=[("", [("list_devices", {"serial": SERIAL}, "\n".join([
          "name              mac                 ip             band  last seen",
          "LAPTOP-PR         3c:22:fb:1a:90:4e   192.168.0.21   5G    now",
          "Pixel-7           a4:c3:f0:77:21:0b   192.168.0.34   5G    now",
          "Arjun's iPad      f0:18:98:5d:c2:33   192.168.0.47   5G    now",
          "TV-LIVING         00:1a:2b:88:41:09   192.168.0.50   wired now",
          "Ring-Doorbell     d4:f5:47:10:bb:6e   192.168.0.61   2.4G  2 min ago",
          "HP-ENVY-6000      9c:b6:54:33:8a:02   192.168.0.72   2.4G  3 h ago",
      ]))])])
    t("10 pm to 6:30 am on school nights. weekends 11 to 8",
      "Setting that up now.",
      tools=[("", [("set_schedule", {"serial": SERIAL, "device": "Arjun's iPad",
                                      "rules": [{"days": "Sun-Thu", "block": "22:00-06:30"}, {"days": "Fri-Sat", "block": "23:00-08:00"}]},
                    json.dumps({"ok": True, "profile": "Arjun", "rules": 2}))])],
      facts={"bedtime": "user"})
    t("will he know?",
      "His iPad will just show no internet during those hours. You can pause or change it in the Northwind app under Family.")
    t("perfect, he's going to hate it",
      "Ha, that's usually how you know it's working.")
    # --- more routine chat -----------------------------------------------------------------
    for q, a in r.sample([
        ("can I see the schedule in the app?", "Yes, under Family, then Arjun, then Schedule."),
        ("does the block affect the TV?", "No, only Arjun's iPad. Other devices are unaffected."),
        ("what if he uses my phone lol", "Then you'd need a rule for your phone too. I'd keep that one as a parent power!"),
        ("can I get a notification when he tries?", "The app can notify you when a blocked device tries to connect. It's off by default; switch it on under Family, Alerts."),
        ("is there a limit to how many rules?", "Up to 10 rules per profile, plenty for most homes."),
    ], 4):
        t(q, a)
    # --- wifi coverage / mesh --------------------------------------------------------------
    t("one more thing, the wifi in the back bedroom is weak. is that the same problem?",
      "No, that's separate: the walls weaken Wi-Fi. The drops are the fibre. For the bedroom, a mesh extender usually helps.")
    t("how much is that",
      "The Northwind Mesh Point M2 rents for $8 a month, or you can buy any compatible EasyMesh extender.")
    t("can the technician bring one on Friday?",
      "Yes, I'll add it to the visit so they can place it in the best spot.",
      tools=[("", [("update_visit", {"ticket": TICKET, "add": ["Mesh Point M2 install"]},
                    json.dumps({"ok": True, "items": ["fibre repair", "Mesh Point M2 install"], "monthly_change": "+8.00"}))])],
      facts={"mesh": "reply"})
    t("so my bill goes up 8 dollars",
      "Yes, $8 a month from the next full month. You can return the extender any time and the charge stops.")
    for k in range(4):
        rssi = r.randint(-78, -69)
        t(r.choice(["how weak is weak? my phone shows 1 bar in there", "checked the bedroom again", "tested in the back room",
                    "still bad in the bedroom"]),
          f"From your router's view your phone is at about {rssi} dBm in that room, which is weak. The extender should bring it to around -55.")
    # --- Wi-Fi password --------------------------------------------------------------------
    t("my neighbour's kid might know our wifi password. can I change it?",
      "Yes. You can do it in the app, or I can change it from here. Everything will need to reconnect.")
    t("you do it, I always mess it up",
      "Sure, what should the new password be? At least 12 characters, please; you can type it here, it's not stored in the chat transcript.")
    t("LarkspurLane-2025!",
      "Changed. Reconnect your devices with the new password; the TV box is wired so it's unaffected.",
      tools=[("", [("set_wifi_password", {"serial": SERIAL, "bands": ["2.4G", "5G"]}, json.dumps({"ok": True, "reconnect_required": 5}))])])
    t("phone reconnected, laptop too",
      "Great. Arjun's iPad will need the new password as well, but only during the allowed hours, of course.")
    t("ha. perfect",
      "Anything else on the network?")
    # --- Stream Plus, decided ----------------------------------------------------------------
    t("ok I thought about Stream Plus. remove it please, we watch everything on apps anyway",
      "Removing it now.",
      tools=[("", [("remove_addon", {"account": ACCOUNT, "addon": "Stream Plus"},
                    json.dumps({"ok": True, "effective": "2025-04-01", "monthly_change": "-12.99",
                                "dvr_recordings_kept_until": "2025-04-30"}))])],
      facts={"stream_plus": "tool:0"})
    t("from when?",
      "From April 1. You'll keep the channels and the cloud DVR until then, and recordings stay available until April 30.")
    t("so my bill will be",
      "Fiber 500 at $64.99 plus the Mesh Point at $8, so $72.99 a month from May, minus the $23.50 credit on the April bill.")
    t("that's better than before at least",
      "It is! You were paying $77.98 before the extender.")
    # --- moving ----------------------------------------------------------------------------
    t("random question, we might move in June. to Cedar Heights. can I take the service?",
      "Let me check whether fibre is available there. Do you have the new address?")
    t("not exactly yet, somewhere around Juniper Court",
      "Checking Juniper Court, Cedar Heights.",
      tools=[("", [("check_availability", {"street": "Juniper Court", "area": "Cedar Heights"}, "\n".join([
          "Juniper Court, Cedar Heights",
          "  fibre (FTTH)       planned, build completes 2025-07",
          "  fixed wireless     available now, up to 200 Mbps",
          "  cable partner      not available",
          "nearest live fibre: Juniper Court 2-40 (odd numbers) from 2025-07-15",
      ]))])],
      facts={"move": "tool:0"})
    t("July? we're moving in June",
      "Then you'd have fixed wireless for a few weeks and we'd switch you to fibre when it's live. No new contract needed, and no fee for the switch.")
    t("ok good to know. I'll come back when we have the address",
      "Sounds good. Start a moving request in the app up to 30 days ahead and we'll keep your number and account.")
    # --- routine ---------------------------------------------------------------------------
    for q, a in r.sample([
        ("do you have an email address for support too?", "You can write to help@northwind.example, but chat is faster."),
        ("how long have I been a customer anyway", "Since August 2021, so three and a half years. Thank you!"),
        ("is there an outage map?", "Yes, on the status page in the app. Your area shows the repair ticket now."),
        ("can I change my wifi name?", "Yes, in the app under Network, Wi-Fi name. Devices will need to reconnect."),
        ("does the hotspot need setup?", "No, switch it on, then join the network name printed on its back."),
        ("will the technician call first?", "You get a text 30 minutes before, and they'll call if they can't find the building."),
    ], 5):
        t(q, a)
    # --- contact number changes (a knowledge update) ---------------------------------------
    t("oh wait, the phone number on file. I'm switching carriers and the 2297 number stops working on Thursday",
      "Thanks for telling me, otherwise the technician's text wouldn't reach you. What's the new number?")
    t("new one is (555) 014-8830",
      "Updated. Texts and calls about the visit will go to (555) 014-8830.",
      tools=[("", [("update_contact", {"account": ACCOUNT, "phone": "(555) 014-8830"},
                    json.dumps({"ok": True, "phone_on_file": "(555) 014-8830", "previous": "(555) 014-2297"}))])],
      facts={"phone_new": "user"})
    t("and texts about Friday go there too?",
      "Yes, I've also updated the visit, so Friday's text goes to (555) 014-8830.")
    t("great",
      "Anything else I can check while we're here?")
    # --- the technician --------------------------------------------------------------------
    t("do you know who's coming on Friday?",
      "Let me see if someone's assigned yet.",
      tools=[("", [("get_visit", {"ticket": TICKET}, json.dumps({
          "window": "Fri 2025-03-14 13:00-15:00", "technician": "Luis Ortega", "van": "EB-17",
          "notes": ["gate code 4417#", "dog on premises (friendly)", "Mesh Point M2 install", "contact (555) 014-8830"],
          "parts": ["SC/APC patch cord", "splice kit", "Mesh Point M2"]}, indent=2))])],
      facts={"technician": "tool:0"})
    t("Luis. ok",
      "Luis Ortega is one of our senior fibre techs, you're in good hands.")
    for q, a in r.sample([
        ("sorry, my son is asking me something", "No rush, I'm here."),
        ("still there?", "Yes, still here!"),
        ("what happens if it drops again tonight", "It may, since the fault is outside. Use the hotspot once it arrives; tonight, your phone's hotspot is a stopgap."),
        ("can I get a copy of this chat?", "Yes, a transcript is emailed to you when the chat ends."),
        ("will the credit show in the app?", "It appears in the app as pending until the April statement is issued."),
        ("how do I know the fix worked", "After the visit, watch the evenings: if there are no drops for three nights, the ticket closes itself."),
        ("is Friday the earliest", "Yes, Friday 1 to 3 is the earliest window for your area right now."),
        ("thanks for being patient", "Of course, happy to help."),
    ], 6):
        t(q, a)
    for q, a in r.sample([
        ("do your techs wear masks or anything", "They carry them and will wear one if you ask."),
        ("will the mesh thing need an app", "It's managed by the same Northwind app; Luis will pair it during the visit."),
        ("can I rate Luis after", "Yes, the visit text includes a short rating link."),
        ("is the gate code saved for future visits", "It's saved on the visit notes for this ticket; tell us again next time to be safe."),
        ("how long will the fibre repair take", "Usually under an hour at the cabinet, plus 15 minutes at your ONT."),
        ("do I need to do anything with the router after", "No, it reconnects by itself. A restart afterwards doesn't hurt, though."),
        ("is there a loyalty discount", "Not on Fiber 500 right now, but your credit this month is a start!"),
    ], 7):
        t(q, a)
    # --- late questions (the probes ask the agent about earlier facts) ---------------------
    t("sorry, I'm filling in a form for work about the outage. what's the ticket again?",
      f"It's {TICKET}.")
    t("and it's been since Tuesday, right?",
      "Yes, the first drop was Tuesday, March 11, at 7:41 pm.")
    t("remind me what credit I'm getting",
      "A credit of $23.50 on your April statement: $12.99 for the duplicate add-on and $10.51 for the outages.")
    t("and the visit is Friday afternoon?",
      "Friday, March 14, between 1 and 3 pm, with Luis Ortega.")
    for q, a in r.sample([
        ("ok I think that's everything", "Great. Before you go, is there anything else at all?"),
        ("the hotspot tracking number?", "Order ORD-77120 with SwiftPost; the tracking link will be texted to you."),
        ("do I need to be home the whole window", "Someone should be home for the whole two hours, in case Luis needs to reach the ONT."),
        ("can my neighbour let him in", "Yes, as long as an adult can let him into the flat and to the ONT."),
        ("will there be a charge for the visit", "No, a repair visit for a network fault is free."),
    ], 4):
        t(q, a)
    t("no that's all. thank you Sam, really",
      "You're welcome, Priya! Good luck with the evenings until Friday, and say hi to Biscuit for me.")
    t("ha will do. bye",
      "Bye! You'll get a short survey after the chat, I'd be grateful if you fill it in.")
    end = len(s.turns)

    probes = [
        s.probe("account", "What is the customer's account number?", ACCOUNT, ["account"], "user-fact"),
        s.probe("address", "What is the service address?", "18 Larkspur Lane, Apt 3B, Eastbridge", ["address"], "user-fact"),
        s.probe("serial", "What is the serial number of the customer's router?", SERIAL, ["serial"], "user-fact"),
        s.probe("outage_start", "When did the connection drops start, according to the customer?",
                "Tuesday around 7:40 pm", ["outage_start"], "user-fact", asked_at=end - 20),
        s.probe("plan", "Which internet plan is the customer on?", "Fiber 500", ["plan"], "tool-fact"),
        s.probe("los", "How many loss-of-signal events did the line check report for the last seven days?", "6",
                ["los_count"], "tool-fact"),
        s.probe("ticket", "What is the repair ticket number?", TICKET, ["ticket"], "tool-fact", asked_at=end - 20),
        s.probe("appointment", "When is the technician visit?", "Friday, March 14, between 1 and 3 pm",
                ["appointment"], "assistant-fact", asked_at=end - 20),
        s.probe("gate_code", "What is the building's gate code?", "4417#", ["gate_code"], "user-fact"),
        s.probe("dog", "What is the name of the customer's dog?", "Biscuit", ["dog"], "user-fact"),
        s.probe("credit", "How much credit will the customer get, and on which statement?",
                "$23.50 on the April statement", ["credit", "credit_statement"], "multi-hop"),
        s.probe("bedtime", "From what time is Arjun's iPad blocked on school nights?", "10 pm (until 6:30 am)",
                ["bedtime"], "user-fact"),
        s.probe("phone", "Which phone number should the technician's text go to?", "(555) 014-8830",
                ["phone_new"], "knowledge-update"),
        s.probe("card", "Which card will autopay charge from April?", "Visa ending 5521", ["card_new"], "knowledge-update"),
        s.probe("stream_plus", "From when is the Stream Plus add-on removed?", "April 1, 2025", ["stream_plus"], "tool-fact"),
        s.probe("technician", "Who is the technician assigned to the visit?", "Luis Ortega", ["technician"], "tool-fact"),
        s.probe("move", "When is fibre expected at Juniper Court in Cedar Heights?", "July 2025 (from July 15)",
                ["move"], "tool-fact"),
    ]
    probes.sort(key=lambda p: (p.asked_at, p.id))
    return Conversation(
        turns=tuple(s.turns), id="support_chat", source="dataset:support_chat",
        metadata={"dataset": "support_chat", "customer": "Priya Raman", "agent": "Sam", "company": "Northwind Fiber (invented)"},
        probes=tuple(probes), system=SYSTEM,
    )
