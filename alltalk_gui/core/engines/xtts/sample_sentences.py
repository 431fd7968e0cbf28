"""A few everyday sentences in each of XTTS v2's 17 languages, written in the language's own script.

Used to train the tiny test model's vocabulary (after XTTS's own text cleaning, so pinyin, romaji and Korean
romanisation are covered) and as the clip texts of the per-language end-to-end tests. Each sentence takes about
2-4 s to say.
"""

from __future__ import annotations

SAMPLE_SENTENCES: dict[str, tuple[str, ...]] = {
    "en": ("The weather is lovely today.", "We walked to the old harbour.", "Thank you, see you tomorrow!"),
    "es": ("Hoy hace muy buen tiempo.", "Caminamos hasta el viejo puerto.", "¡Gracias, hasta mañana, señor!"),
    "fr": ("Il fait très beau aujourd'hui.", "Nous avons marché jusqu'au vieux port.", "Merci, à demain, garçon !"),
    "de": ("Heute ist das Wetter schön.", "Wir sind zum alten Hafen gegangen.", "Danke, bis morgen, Grüße!"),
    "it": ("Oggi il tempo è bellissimo.", "Siamo andati al vecchio porto.", "Grazie, a domani, perché no?"),
    "pt": ("Hoje o tempo está ótimo.", "Caminhamos até o porto antigo.", "Obrigado, até amanhã, irmão!"),
    "pl": ("Dzisiaj jest piękna pogoda.", "Poszliśmy do starego portu.", "Dziękuję, do zobaczenia jutro!"),
    "tr": ("Bugün hava çok güzel.", "Eski limana kadar yürüdük.", "Teşekkürler, yarın görüşürüz!"),
    "ru": ("Сегодня прекрасная погода.", "Мы дошли до старого порта.", "Спасибо, до завтра, друзья!"),
    "nl": ("Het weer is vandaag heerlijk.", "We liepen naar de oude haven.", "Dank je, tot morgen!"),
    "cs": ("Dnes je krásné počasí.", "Došli jsme až do starého přístavu.", "Děkuji, uvidíme se zítra!"),
    "ar": ("الطقس جميل اليوم.", "مشينا إلى الميناء القديم.", "شكرا، أراك غدا!"),
    "zh-cn": ("今天天气很好。", "我们走到了老港口。", "谢谢，明天见！"),
    "hu": ("Ma nagyon szép az idő.", "Elsétáltunk a régi kikötőig.", "Köszönöm, holnap találkozunk!"),
    "ko": ("오늘은 날씨가 좋아요.", "우리는 오래된 항구까지 걸었어요.", "감사합니다, 내일 봐요!"),
    "ja": ("今日はいい天気ですね。", "古い港まで歩きました。", "ありがとう、また明日！"),
    "hi": ("आज मौसम बहुत अच्छा है।", "हम पुराने बंदरगाह तक चले।", "धन्यवाद, कल मिलते हैं!"),
}

# espeak-ng voices that read each language (for synthetic test speech).
ESPEAK_VOICES: dict[str, str] = {code: code for code in SAMPLE_SENTENCES} | {"en": "en-us", "zh-cn": "cmn"}
